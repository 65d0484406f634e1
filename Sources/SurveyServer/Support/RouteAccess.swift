import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

extension Services {
    typealias AdmittedHandler = @Sendable (Admission, HTTPRequest) throws -> HTTPResponse

    /// Registers a route whose handler runs only for the callers `access` admits: the bearer
    /// token and the declared access are checked in one read snapshot before `handler` runs.
    func route(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access, bodyLimit: Int? = nil,
               runs execution: Router.Execution? = nil, _ handler: @escaping AdmittedHandler) {
        // At start-up, never on a request: a route open to anyone has no caller to admit.
        precondition(access != .anyone, "\(pattern): a route open to anyone is a publicRoute")
        let services = self
        router.add(method, pattern, access: access, bodyLimit: bodyLimit, runs: execution) { request in
            try handler(try services.admit(access, request.head), request)
        }
    }

    /// The same for a route whose body may also be `multipart/form-data`, decoded within `multipart`.
    func route(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access, bodyLimit: Int,
               multipart: FormDecoder.Limits, _ handler: @escaping AdmittedHandler) {
        precondition(access != .anyone, "\(pattern): a route open to anyone is a publicRoute")
        let services = self
        // A form's files go to disk as they arrive: its caller is admitted before the first byte.
        router.add(method, pattern, access: access, bodyLimit: bodyLimit, multipart: multipart, admit: { head in _ = try services.admit(access, head) }) { request in
            try handler(try services.admit(access, request.head), request)
        }
    }

    /// A route whose operation admits the caller itself, inside the read it makes anyway (a
    /// submission's single snapshot, tus's claim before its row is read): `access` is the
    /// operation's own declaration, so what the route lists is what the operation checks.
    func routeAdmittedByOperation(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access,
                                  runs execution: Router.Execution? = nil, _ handler: @escaping Router.Handler) {
        router.add(method, pattern, access: access, runs: execution, handler)
    }

    /// The same for a streaming route.
    func routeAdmittedByOperation(_ router: inout Router, _ method: String, _ pattern: String, _ access: Access,
                                  streamingTo opener: @escaping Router.SinkOpener, _ handler: @escaping Router.Handler) {
        router.add(method, pattern, access: access, streamingTo: opener, handler)
    }

    /// A route open to anyone: no token is read.
    func publicRoute(_ router: inout Router, _ method: String, _ pattern: String, runs execution: Router.Execution? = nil,
                     _ handler: @escaping Router.Handler) {
        router.add(method, pattern, access: Access.anyone, runs: execution, handler)
    }

    /// Steps 1–2 for `access`, in one read snapshot.
    func admit(_ access: Access, _ head: RequestHead) throws -> Admission {
        return try database.read { db in
            let caller = try operations.authenticate(bearerToken: head.bearerToken, in: db)
            return try operations.admit(caller, to: access, orgId: head.parameter("orgId"), in: db)
        }
    }
}
