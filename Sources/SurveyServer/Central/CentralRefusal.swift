import SurveyDomain
import SurveyForms
import SurveyHTTP
import SurveyOData

/// How ODK Central's API refuses: surveyd's problem document with Central's `message` (the
/// detail) and numeric `code` added, so pyodk's `PyODKError` and `is_central_error` work as on
/// Central while surveyd's own clients read the same members as everywhere.
enum CentralRefusal {
    /// Central's top-level paths: anything under them that the door does not offer is 501 / 1050.
    static let prefixes = ["/v1/projects", "/v1/users", "/v1/sessions", "/v1/roles", "/v1/assignments", "/v1/config", "/v1/audits", "/v1/backup"]

    static func answer(_ handler: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try handler() } catch let e as ApiError {
            return problem(e)
        } catch {
            return problem(ApiError(.internalError, "The server could not answer; nothing partial was written. Try again later."))
        }
    }

    static func problem(_ error: ApiError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        let status = status ?? error.code.httpStatus
        return .problem(shaped(error, status: status), status: status, headers: headers)
    }

    /// `error` with Central's `message` and `code` beside surveyd's members.
    static func shaped(_ error: ApiError, status: Int) -> ApiError {
        var e = error
        e.extra["message"] = .string(error.detail)
        // A door's own case keeps its code (a stale entity version: 409.15).
        if e.extra["code"] == nil { e.extra["code"] = .number(centralCode(error.code, status: status)) }
        return e
    }

    /// A refusal before a streamed body is read (the engine answers it as thrown), in Central's shape.
    static func beforeTheBody(_ error: any Error) -> ProtocolRefusal {
        let e = error as? ApiError ?? ApiError(.internalError, "The server could not answer; nothing was written. Try again later.")
        return ProtocolRefusal(shaped(e, status: e.code.httpStatus))
    }

    /// A feed's refusal of its query (400, 501) under Central's paths: OData's error body, which
    /// OData clients read, with Central's `message` and `code` beside it, which pyodk reads.
    static func odata(_ e: ODataError) -> HTTPResponse {
        let body: JSONValue = ["error": ["code": .string(String(e.status)), "message": .string(e.message)], "message": .string(e.message),
                               "code": .number(Double("\(e.status).1") ?? Double(e.status))]
        return HTTPResponse(status: e.status, headers: [("Content-Type", "application/json"), ("OData-Version", "4.0")], body: CanonicalJSON.encode(body))
    }

    /// Central's code for a refusal: its own where Central has one for the case, else
    /// `<status>.<errorCode>`.
    static func centralCode(_ code: ErrorCode, status: Int) -> Double {
        switch code {
        case .unauthenticated: 401.2
        case .forbidden: 403.1
        case .notFound where status == 404: 404.1
        case .malformedRequest, .invalidIdentifier: 400.1
        case .idempotencyConflict: 409.3
        default: Double("\(status).\(code.rawValue)") ?? Double(status)
        }
    }

    /// The server's own refusals under Central's paths: a path no route takes is a route of
    /// Central this door does not offer (501 / 1050, never a 404 a script would read as "the
    /// thing is missing"). A method the path's routes do not take stays HTTP's 405 with `Allow`
    /// (as everywhere in surveyd), its sentence saying what is offered; anything else keeps its code.
    static func routerRefusal(_ error: ApiError, status: Int, path: String) -> HTTPResponse {
        guard error.code == .notFound else { return problem(error, status: status) }
        if status == 405 {
            return problem(ApiError(.notFound, "This method is not offered on this path of ODK Central's API (Allow lists those that are). " + instead(path)), status: 405)
        }
        return problem(notOffered(path))
    }

    static func notOffered(_ path: String) -> ApiError {
        ApiError(.notOffered, "surveyd does not offer this route of ODK Central's API. " + instead(path)
                 + " Docs/central-api.md lists the Central routes surveyd offers.")
    }

    /// What surveyd offers instead of the route at `path`, in a sentence.
    static func instead(_ path: String) -> String {
        if path.contains(".svc") {
            return "A form's OData service is /v1/projects/{projectId}/forms/{xmlFormId}.svc (service document, $metadata and its tables), an entity list's /v1/projects/{projectId}/datasets/{name}.svc/Entities; surveyd's own are /v1/orgs/{orgId}/surveys/{surveyId}.svc and /v1/orgs/{orgId}/entity-lists/{name}.svc."
        }
        if path.contains("/datasets") { return "Entity lists and their entities are at /v1/orgs/{orgId}/entity-lists (Docs/entities.md)." }
        if path.contains("/app-users") || path.contains("/assignments") || path.hasPrefix("/v1/users") || path.hasPrefix("/v1/roles") {
            return "Users, their roles and their tokens are managed at /v1/orgs/{orgId}/users, or on the console's users page."
        }
        if path.contains("submissions.csv") { return "Exports are at /v1/orgs/{orgId}/surveys/{surveyId}/responses.csv, .xlsx, .geojson and .zip." }
        if path.contains("/submissions") { return "Responses are read and reviewed at /v1/orgs/{orgId}/responses." }
        if path.contains("/forms") { return "Surveys are published at /v1/orgs/{orgId}/surveys and /v1/orgs/{orgId}/surveys/{surveyId}/versions." }
        if path.hasPrefix("/v1/projects") { return "An operator creates organizations (projects) with POST /v1/orgs." }
        return "Site-wide administration is the operator's: the admin commands and /v1/orgs."
    }
}
