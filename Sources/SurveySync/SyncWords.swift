import Foundation

/// The sentences a person reads. Part of the API: apps show them, tests assert them.
public enum SyncWords {
    public static let signInAgain = "Sign in again to send your saved work. It stays on this device until then."
    public static let renewalRequired = "Your organization's subscription has to be renewed before your work can be sent. It stays on this device and goes as soon as the subscription is renewed."

    /// A redirect (never followed). `target`: host and port it pointed to, or empty if it named none.
    public static func redirect(to target: String) -> String {
        "The server answered with a redirect\(target.isEmpty ? "" : " to \(target)"); surveyd never redirects, so the server address may be wrong. Check the server address in settings."
    }

    /// A file's upload address on another origin (never used). `target`: host and port it named,
    /// or empty if it named none.
    public static func uploadElsewhere(to target: String) -> String {
        "The server pointed this file's upload to another address\(target.isEmpty ? "" : ", \(target)"); surveyd never does that, so the server address may be wrong. Check the server address in settings."
    }

    /// The sentences for a permanent refusal.
    static func attention(for problem: Problem?, status: Int) -> [String] {
        switch problem?.errorCode {
        case 1002?:
            let fields = (problem?.errors ?? []).map(field)
            return fields.isEmpty ? ["The server says the answers break the survey's rules. Check them and save a corrected copy."] : fields
        case 1003?:
            return ["This device's copy of the survey does not match the server's. Download the survey again; your answers are kept."]
        case 1004?:
            return ["This was already sent with different content under the same id, so it was not sent again. Contact support; your answers are kept."]
        case 1005?:
            return ["The server does not know the survey or response this refers to, or you may no longer see it. It will not be sent again automatically."]
        case 1006?:
            return ["Your account is no longer allowed to send this (your role in the organization changed). Ask your administrator; it will not be sent again automatically."]
        case 1010?, 1011?, 1012?, 1013?, 1015?:
            return ["The server did not accept an attached file: \(problem?.detail ?? "it cannot be stored"). Attach it again in a corrected copy."]
        case 1020?, 1021?:
            let now = [problem?.reviewState.map(reviewStateWords), problem?.revision.map { "revision \($0)" }].compactMap { $0 }
            let state = now.isEmpty ? "" : " (it is now \(now.joined(separator: ", ")))"
            return ["This response changed on the server before your correction arrived\(state): another device or a reviewer acted on it first. Your correction was not applied; open the response again to see its current version."]
        case 1022?:
            return ["The field task was already completed by other work. Send the response without the task if it is still needed."]
        case 1023?:
            return ["The survey was closed before this response reached the server, so it takes no new responses. Your answers are kept on this device; ask your administrator whether the survey will open again. It will not be sent again automatically."]
        default:
            return ["The server refused this (HTTP \(status)\(problem?.errorCode.map { ", error \($0)" } ?? "")): \(problem?.detail ?? "no reason given"). It will not be sent again automatically."]
        }
    }

    /// `answers.household_size` + "must be at most 50" → "Check the answer to household_size: must be at most 50."
    static func field(_ error: Problem.FieldError) -> String {
        if error.path.hasPrefix("answers.") {
            return "Check the answer to \(error.path.dropFirst("answers.".count)): \(error.message)."
        }
        return "Check \(error.path): \(error.message)."
    }

    static func reviewStateWords(_ state: String) -> String {
        switch state {
        case "in_review": "in review"
        case "returned": "returned for correction"
        // A reviewer changed its answers (a new version of the response, the earlier kept).
        case "edited": "edited by a reviewer"
        // A reviewer marked it as needing a look, without returning it.
        case "hasIssues": "flagged as having issues"
        default: state
        }
    }

    /// Codes this version of the library knows; others are judged by `retryable` and status.
    static let knownCodes: Set<Int> = [1001, 1002, 1003, 1004, 1005, 1006, 1007, 1010, 1011, 1012, 1013, 1014, 1015,
                                       1020, 1021, 1022, 1023, 1030, 1031, 1032, 1040, 1099]
}
