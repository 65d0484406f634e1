import SurveyDomain

/// The rule for the name of an organization or a user (the schemas' `name`): 1 to 200
/// characters, not only white space. One rule, so a form that creates both checks both up front.
public enum DisplayName {
    public static let maxCharacters = 200

    public static func isValid(_ name: String) -> Bool {
        name.unicodeScalars.contains(where: { !" \t\r\n".unicodeScalars.contains($0) }) && name.count <= maxCharacters
    }

    /// `name`, or 1002 naming `field`.
    public static func checked(_ name: String, field: String = "name") throws -> String {
        guard isValid(name) else {
            throw ApiError(.validationFailed, "`\(field)` must be 1 to \(maxCharacters) characters.",
                           errors: [FieldError(path: field, message: "1 to \(maxCharacters) characters")])
        }
        return name
    }
}
