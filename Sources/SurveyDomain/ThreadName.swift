import Foundation

/// Names the calling thread where the kernel shows it (`top -H`, `perf`, `/proc/*/task/*/comm`):
/// at most 15 bytes, or Linux keeps none. Foundation's `Thread.name`, set from the new thread,
/// reaches the kernel only once the starting thread has stored the new one's handle, which under
/// load it sometimes has not yet: the name was then lost. `pthread_setname_np` on the thread
/// itself is never late; Swift does not see it in glibc's headers (a GNU extension), so it is
/// looked up once by name.
public enum ThreadName {
    #if os(Linux)
    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
    nonisolated(unsafe) private static let setName: SetName? = dlsym(nil, "pthread_setname_np").map { unsafeBitCast($0, to: SetName.self) }
    #endif

    /// Call it on the thread being named.
    public static func set(_ name: String) {
        #if os(Linux)
        if let setName { _ = setName(pthread_self(), name); return }
        #endif
        Thread.current.name = name
    }
}
