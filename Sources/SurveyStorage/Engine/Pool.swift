import Foundation

/// Things used by one thread at a time (connections), handed out and taken back; a caller waits
/// while every one is out.
final class Pool<Element>: @unchecked Sendable {
    // @unchecked: `idle` is guarded by `cond`; an element is used by one thread while it is out.
    private var idle: [Element]
    private let cond = NSCondition()

    init(_ elements: [Element]) { idle = elements }

    /// `body` gets an element and may replace it (a connection opened again after it broke).
    func with<T>(_ body: (inout Element) throws -> T) rethrows -> T {
        cond.lock()
        while idle.isEmpty { cond.wait() }
        var element = idle.removeLast()
        cond.unlock()
        defer {
            cond.lock()
            idle.append(element)
            cond.signal()
            cond.unlock()
        }
        return try body(&element)
    }
}
