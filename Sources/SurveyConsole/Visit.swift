import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// A signed-in visit to a console page: the visitor, admitted to the page's declared `Access`
/// by the same check as the API's routes, and the form a POST sent (its CSRF token checked).
public struct Visit: Sendable {
    let visitor: Console.Visitor
    public let admission: Admission
    let form: FormFields
    /// `http(s)://host` as the browser reached the console: where links for other programs point.
    let origin: String

    var orgId: String { admission.orgId }
    /// The signed-in user of the page's organization; a page declared `.member` always has one.
    func member() throws -> UserRecord { try admission.member() }
}
