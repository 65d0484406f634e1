/// The kinds of question a survey definition may contain; raw values are the wire names.
public enum QuestionType: String, Sendable, CaseIterable {
    case text
    case integer
    case decimal
    case selectOne = "select_one"
    case selectMultiple = "select_multiple"
    case date
    case geopoint
    case file
}
