/// The functions the language knows, resolved from their names once, at parse time.
/// Arities follow JavaRosa (XPathFuncExpr.eval), so that a definition the server accepts also
/// runs in ODK Collect.
enum Function: String, CaseIterable, Sendable {
    // Select
    case selected, isSelected = "is-selected", countSelected = "count-selected", selectedAt = "selected-at"
    // Boolean
    case not, `true`, `false`, `if`, coalesce, boolean, booleanFromString = "boolean-from-string", regex
    // String
    case string, concat, join, stringLength = "string-length", contains, startsWith = "starts-with",
         endsWith = "ends-with", substr, substringBefore = "substring-before", substringAfter = "substring-after",
         normalizeSpace = "normalize-space", translate
    // Number
    case number, int, round, floor, ceiling, abs, pow, sqrt, exp, exp10, log, log10, pi,
         sin, cos, tan, asin, acos, atan, atan2
    // Node-set
    case count, countNonEmpty = "count-non-empty", sum, min, max, position
    // Date
    case date, dateTime = "date-time", decimalDateTime = "decimal-date-time", formatDate = "format-date",
         formatDateTime = "format-date-time"
    // The moment and the device: never evaluated here.
    case today, now, random, uuid, once
    // What only the device evaluates, being about its own state, other instances or files the
    // server does not hold (ODK XForms): kept, never evaluated here, as the ones above.
    case indexedRepeat = "indexed-repeat", choiceName = "jr:choice-name", digest, area, distance, version, randomize,
         base64Decode = "base64-decode", checklist, weightedChecklist = "weighted-checklist"
    // A value from a CSV file attached to the form (`Lookup`).
    case pulldata

    static let byName: [String: Function] = {
        var map: [String: Function] = [:]
        for f in Function.allCases { map[f.rawValue] = f }
        return map
    }()

    var name: String { rawValue }

    /// Fewest and most arguments; nil is no upper bound.
    var arity: (min: Int, max: Int?) {
        switch self {
        case .true, .false, .pi, .today, .now, .random, .version: return (0, 0)
        case .indexedRepeat, .weightedChecklist: return (3, nil)
        case .choiceName: return (2, 2)
        case .digest: return (2, 3)
        case .area, .base64Decode: return (1, 1)
        case .distance: return (1, nil)
        case .randomize: return (1, 2)
        case .checklist: return (2, nil)
        case .not, .boolean, .booleanFromString, .string, .countSelected, .number, .int, .floor, .ceiling, .abs,
             .sqrt, .exp, .exp10, .log, .log10, .sin, .cos, .tan, .asin, .acos, .atan, .count, .countNonEmpty,
             .sum, .date, .dateTime, .decimalDateTime, .once:
            return (1, 1)
        case .selected, .isSelected, .selectedAt, .coalesce, .regex, .contains, .startsWith, .endsWith,
             .substringBefore, .substringAfter, .pow, .atan2, .formatDate, .formatDateTime:
            return (2, 2)
        case .if, .translate: return (3, 3)
        case .pulldata: return (4, 4)
        case .round: return (1, 2)
        case .substr: return (2, 3)
        case .stringLength, .normalizeSpace, .position, .uuid: return (0, 1)
        case .concat: return (0, nil)
        case .join, .min, .max: return (1, nil)
        }
    }

    /// Its value depends on when and where it is evaluated (today(), now(), random(), uuid(),
    /// once()), or only the device evaluates it (indexed-repeat(), jr:choice-name(), …): the server
    /// does not evaluate such an expression.
    var dependsOnMoment: Bool {
        switch self {
        case .today, .now, .random, .uuid, .once, .indexedRepeat, .choiceName, .digest, .area, .distance, .version, .randomize,
             .base64Decode, .checklist, .weightedChecklist: return true
        default: return false
        }
    }

    /// "expects 2 arguments, got 3" and its variants.
    func arityMessage(got: Int) -> String {
        let (lo, hi) = arity
        let expected: String
        switch (lo, hi) {
        case (0, 0?): expected = "no arguments"
        case (let a, let b?) where a == b: expected = a == 1 ? "1 argument" : "\(a) arguments"
        case (let a, let b?) where b == a + 1: expected = "\(a) or \(b) arguments"
        case (let a, let b?): expected = "\(a) to \(b) arguments"
        case (let a, nil): expected = a == 1 ? "at least 1 argument" : "at least \(a) arguments"
        }
        return "\(name)() expects \(expected), got \(got)"
    }
}
