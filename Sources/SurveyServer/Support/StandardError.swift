#if canImport(Glibc)
import Glibc
#endif

/// Operational messages on stderr (start, stop, files swept). Written with `write(2)` and never
/// checked: `FileHandle.standardError.write` traps when the write fails, so a reader of stderr
/// that had gone away (a closed pipe) turned a SIGTERM into a crash before the graceful stop.
public enum StandardError {
    public static func line(_ message: String) {
        var bytes = Array(message.utf8)
        bytes.append(10)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
