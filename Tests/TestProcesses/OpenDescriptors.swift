import Foundation

/// The test process's open descriptors: how many, and many more held for a while (what made
/// Foundation's `Process.run()` crash: see `SpawnedProcess`).
public enum OpenDescriptors {
    /// How many descriptors this process has open now.
    public static var count: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// Runs `body` while `extra` more descriptors (/dev/null, read-only) are open, the soft
    /// RLIMIT_NOFILE raised for them if it has to be and put back afterwards.
    public static func holding<T>(_ extra: Int, _ body: () throws -> T) throws -> T {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        getrlimit(resource, &limit)
        let original = limit
        // Room for what the other tests running meanwhile open too.
        let needed = rlim_t(count + extra + 1_024)
        if limit.rlim_cur < needed {
            guard limit.rlim_max >= needed else {
                throw SpawnedProcess.Failure(description: "\(extra) more descriptors need a limit of \(needed); the hard limit is \(limit.rlim_max)")
            }
            limit.rlim_cur = needed
            setrlimit(resource, &limit)
        }
        var held: [Int32] = []
        defer {
            held.forEach { close($0) }
            var restored = original
            setrlimit(resource, &restored)
        }
        for _ in 0..<extra {
            // Not close-on-exec: a child that got them anyway would show it.
            let fd = open("/dev/null", O_RDONLY)
            guard fd >= 0 else { throw SpawnedProcess.Failure(description: "open /dev/null after \(held.count): \(String(cString: strerror(errno)))") }
            held.append(fd)
        }
        return try body()
    }
}
