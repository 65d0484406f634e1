import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage
import SurveyWebhooks

/// The HTTP door: each capability registers its routes, decodes requests into the operations'
/// commands and renders their outcomes. The rules themselves live in `SurveyOperations`.
struct Services: Sendable {
    let operations: Operations
    /// Resumable uploads with a request (PATCH, DELETE) or the expiry sweep at work on them.
    let uploadLocks: BusySet
    let readiness: ReadinessProbe
    /// The webhook outbox's deliveries (their idle looks go to `/metrics`).
    let dispatcher: WebhookDispatcher

    var database: Database { operations.database }
    var gate: WriteGate { operations.gate }
    var metrics: Metrics { operations.metrics }
    var blobs: BlobStore { operations.blobs }
    var limits: Operations.Limits { operations.limits }
    var clock: any ServerClock { operations.clock }

    func register(into router: inout Router) {
        HealthService(services: self).register(into: &router)
        OrgService(services: self).register(into: &router)
        UserService(services: self).register(into: &router)
        SurveyService(services: self).register(into: &router)
        ResponseService(services: self).register(into: &router)
        UploadService(services: self).register(into: &router)
        ResumableUploadService(services: self, busy: uploadLocks).register(into: &router)
        TaskService(services: self).register(into: &router)
        EntityListService(services: self).register(into: &router)
        ReviewService(services: self).register(into: &router)
        ChangesService(services: self).register(into: &router)
        ExportService(services: self).register(into: &router)
        WebhookService(services: self).register(into: &router)
        OpenRosaService(services: self).register(into: &router)
        // One feed, with one set of feed workers, behind every door that reads it.
        let surveyFeeds = ODataService(services: self)
        let entityFeeds = EntityListODataService(services: self, surveyFeeds: surveyFeeds)
        surveyFeeds.register(into: &router)
        entityFeeds.register(into: &router)
        CentralService(services: self, surveyFeeds: surveyFeeds, entityFeeds: entityFeeds).register(into: &router)
    }

    /// Step 1 from a request's `Authorization` header.
    func authenticate(_ head: RequestHead) throws -> Caller {
        try operations.authenticate(bearerToken: head.bearerToken)
    }

    /// Step 2 (tenancy and role): see `Operations.member`.
    func member(_ caller: Caller, of orgId: String, withAnyOf roles: Role...) throws -> UserRecord {
        try operations.member(caller, of: orgId, withAnyOf: roles)
    }
}

extension HTTPResponse {
    /// 201 with `Location`.
    static func created(_ location: String, _ body: JSONValue) -> HTTPResponse {
        .json(201, body, headers: [("Location", location)])
    }
}
