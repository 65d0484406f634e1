import Testing
import SurveyDomain
@testable import SurveyOperations

/// How a command's JSON document is read: every shape an operation does not expect is 1031 with
/// a sentence naming the member, and a date-time that is not one is 1002 at its path.
@Suite struct JSONBodyTests {
    private func body(_ text: String) throws -> JSONBody { try JSONBody(Array(text.utf8)) }

    private func malformed(_ read: () throws -> Any) -> String? {
        do {
            _ = try read()
            return nil
        } catch let e as ApiError {
            return e.code == .malformedRequest ? e.detail : "\(e.code): \(e.detail)"
        } catch {
            return "\(error)"
        }
    }

    @Test func aBodyThatIsNotAJSONObjectIsRefused() {
        #expect(malformed { try JSONBody([]) } == "The request needs a JSON body.")
        #expect(malformed { try body(#"{"title": "#) }?.hasPrefix("The body is not valid JSON: ") == true)
        #expect(malformed { try body(#"{"title": "#) }?.hasSuffix(" at byte 10.") == true)
        #expect(malformed { try body("[1, 2]") } == "The body must be a JSON object.")
        #expect(malformed { try body(#""title""#) } == "The body must be a JSON object.")
    }

    @Test func eachMemberIsRequiredAndOfItsType() throws {
        let b = try body(#"{"title": 5, "flag": "yes", "n": 1.5, "roles": ["a", 2], "tags": "a", "at": "yesterday", "none": null}"#)
        #expect(malformed { try b.string("missing") } == "`missing` is required.")
        #expect(malformed { try b.string("title") } == "`title` must be a string.")
        #expect(malformed { try b.optionalString("title") } == "`title` must be a string.")
        #expect(try b.optionalString("none") == nil && b.optionalString("missing") == nil)
        #expect(malformed { try b.bool("missing") } == "`missing` is required.")
        #expect(try b.bool("missing", default: true))
        #expect(malformed { try b.bool("flag") } == "`flag` must be true or false.")
        #expect(malformed { try b.optionalBool("flag") } == "`flag` must be true or false.")
        #expect(try b.optionalBool("none") == nil)
        #expect(malformed { try b.int("missing") } == "`missing` is required.")
        #expect(malformed { try b.int("n") } == "`n` must be an integer.")
        #expect(malformed { try b.stringArray("missing") } == "`missing` is required.")
        #expect(malformed { try b.stringArray("tags") } == "`tags` must be an array of strings.")
        #expect(malformed { try b.stringArray("roles") } == "`roles` must be an array of strings.")
        #expect(malformed { try b.optionalStringArray("roles") } == "`roles` must be an array of strings.")
        #expect(try b.optionalStringArray("none") == nil)
        #expect(malformed { try b.timestamp("missing") } == "`missing` is required.")
        #expect(try b.optionalTimestamp("none") == nil)
    }

    @Test func aDateTimeThatIsNotOneIsAValidationError() throws {
        let b = try body(#"{"at": "yesterday", "when": "2026-12-03T10:00:00Z"}"#)
        do {
            _ = try b.timestamp("at")
            Issue.record("read")
        } catch {
            #expect(error.code == .validationFailed)
            #expect(error.detail == "`at` must be an RFC 3339 date-time.")
            #expect(error.errors == [FieldError(path: "at", message: "not an RFC 3339 date-time")])
        }
        #expect(try b.optionalTimestamp("when") == Timestamp.parse("2026-12-03T10:00:00Z"))
    }

    @Test func wellFormedMembersAreRead() throws {
        let b = try body(#"{"title": "Wells", "flag": false, "n": 3, "roles": ["admin", "collector"]}"#)
        #expect(try b.string("title") == "Wells")
        #expect(try b.bool("flag") == false && b.optionalBool("flag") == false)
        #expect(try b.int("n") == 3)
        #expect(try b.stringArray("roles") == ["admin", "collector"] && b.optionalStringArray("roles") == ["admin", "collector"])
    }
}
