import Testing
import SurveyDomain

/// Server ids sort in the order they were made — also many in one millisecond, and when the clock
/// steps back — so a listing in id order is the order of arrival.
@Suite struct IdsTests {
    @Test func idsMadeInOneMillisecondSortInTheOrderTheyWereMade() {
        let ids = (0..<5_000).map { _ in Ids.make("rsp", nowMillis: 1_780_000_000_000) }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
    }

    @Test func aClockThatStepsBackStillMakesLaterIds() {
        let first = Ids.make("rsp", nowMillis: 1_790_000_000_000)
        let after = Ids.make("rsp", nowMillis: 1_789_999_999_000)
        #expect(first < after)
    }

    @Test func anIdIsAVersion7UUIDWithItsPrefix() {
        let id = Ids.make("rsp", nowMillis: 1_780_000_000_000)
        let body = id.dropFirst(4)
        #expect(id.hasPrefix("rsp_"))
        #expect(body.count == 36)
        let parts = body.split(separator: "-")
        #expect(parts.map(\.count) == [8, 4, 4, 4, 12])
        #expect(parts[2].first == "7")
        #expect(["8", "9", "a", "b"].contains(parts[3].first))
        // The millisecond, in the first 48 bits: this one, or a later one when an id was made
        // later than it already (ids made by other tests meanwhile, with the real clock).
        let ms = UInt64(String(parts[0] + parts[1]), radix: 16) ?? 0
        #expect(ms >= 1_780_000_000_000 && ms < 1_780_000_000_000 + 100 * 365 * 86_400_000)
    }
}
