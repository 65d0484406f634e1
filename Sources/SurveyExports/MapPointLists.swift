import Synchronization

/// The few `MapPointList`s the console map read last, so that a page moving about a survey of
/// 100,000 points clusters them in memory instead of reading every response's location again
/// (about a second) for each move. A list is kept under its `Key` — the survey, the location
/// question, the filters and whose responses the caller sees — with the `Mark` of the snapshot it
/// was read from: a request reads its own snapshot's mark (the responses' count under the filter
/// and the organization's last audit sequence number, which every new, edited or reviewed response
/// moves) and takes the list only when both are the same, so a change is seen by the next request.
/// Bounded: at most `capacity` lists and `maxPoints` points in all, the least recently used
/// dropped first; a list larger than `maxPoints` is used for its request and not kept.
public final class MapPointLists: Sendable {
    public struct Key: Hashable, Sendable {
        public let orgId: String
        public let surveyId: String
        public let geoField: String
        public let lineFields: [String]
        /// The filters as given, in a fixed order.
        public let filters: [String]
        /// nil: every response; a user id: that collector's own only.
        public let onlySubmitter: String?
        public init(orgId: String, surveyId: String, geoField: String, lineFields: [String], filters: [String: String], onlySubmitter: String?) {
            self.orgId = orgId; self.surveyId = surveyId; self.geoField = geoField; self.lineFields = lineFields
            self.filters = filters.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }
            self.onlySubmitter = onlySubmitter
        }
    }

    public struct Mark: Equatable, Sendable {
        public let rows: Int
        public let sequence: Int64
        public init(rows: Int, sequence: Int64) { self.rows = rows; self.sequence = sequence }
    }

    private struct Entry {
        let mark: Mark
        let list: MapPointList
        var used: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var clock: UInt64 = 0
        var points: Int { entries.values.reduce(0) { $0 + $1.list.count } }
    }

    public let capacity: Int
    public let maxPoints: Int
    private let state = Mutex(State())

    public init(capacity: Int = 4, maxPoints: Int = 400_000) {
        self.capacity = capacity
        self.maxPoints = maxPoints
    }

    /// The list kept under `key` when it was read at `mark`, else nil.
    public func list(_ key: Key, at mark: Mark) -> MapPointList? {
        state.withLock { s in
            guard var e = s.entries[key], e.mark == mark else { return nil }
            s.clock += 1
            e.used = s.clock
            s.entries[key] = e
            return e.list
        }
    }

    /// Keeps `list` (read at `mark`) under `key`, in place of any older one.
    public func keep(_ list: MapPointList, _ key: Key, at mark: Mark) {
        guard list.count <= maxPoints else { return }
        state.withLock { s in
            s.entries[key] = nil
            var points = s.points
            while !s.entries.isEmpty && (s.entries.count >= capacity || points + list.count > maxPoints) {
                guard let oldest = s.entries.min(by: { $0.value.used < $1.value.used }) else { break }
                points -= oldest.value.list.count
                s.entries[oldest.key] = nil
            }
            s.clock += 1
            s.entries[key] = Entry(mark: mark, list: list, used: s.clock)
        }
    }

    /// How many lists are kept.
    public var count: Int { state.withLock { $0.entries.count } }
}
