import SurveyDomain
import SurveyHTTP
import SurveyOperations
import SurveyStorage

/// The API's door onto field tasks (`FieldTasks`), and their reads.
struct TaskService {
    let services: Services

    func register(into router: inout Router) {
        services.route(&router, "POST", "/v1/orgs/{orgId}/tasks", .member(anyOf: [.admin]), create)
        services.route(&router, "GET", "/v1/orgs/{orgId}/tasks", .member(anyOf: []), list)
        services.route(&router, "GET", "/v1/orgs/{orgId}/tasks/{taskId}", .member(anyOf: []), get)
    }

    static func taskJSON(_ t: TaskRecord) -> JSONValue {
        var o: [String: JSONValue] = [
            "taskId": .string(t.taskId), "title": .string(t.title), "surveyId": .string(t.surveyId),
            "assigneeUserId": .string(t.assigneeUserId), "state": .string(t.state), "createdAt": .string(Timestamp.format(t.createdAt)),
        ]
        if let d = t.dueAt { o["dueAt"] = .string(Timestamp.format(d)) }
        if let n = t.notes { o["notes"] = .string(n) }
        if let c = t.completedAt { o["completedAt"] = .string(Timestamp.format(c)) }
        if let b = t.completedBy { o["completedBy"] = .string(b) }
        if let r = t.responseId { o["responseId"] = .string(r) }
        return .object(o)
    }

    func create(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (TaskRecord) -> HTTPResponse = { .created("/v1/orgs/\(orgId)/tasks/\($0.taskId)", Self.taskJSON($0)) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.tasks.create(orgId: orgId, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            return FieldTasks.NewTask(title: try body.string("title"), surveyId: try body.string("surveyId"),
                                      assigneeUserId: try body.string("assigneeUserId"), notes: try body.optionalString("notes"),
                                      dueAt: try body.optionalTimestamp("dueAt"))
        }
        return try keyed.answer(outcome)
    }

    func list(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let page = try Page(request)
        let all = services.operations.seesAll(user)
        let rows = try services.database.read { try $0.tasks(orgId: orgId, assignee: all ? nil : user.userId, after: page.after, limit: page.limit) }
        return .json(200, page.render(rows, id: \.taskId, item: Self.taskJSON))
    }

    func get(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return .json(200, Self.taskJSON(try services.operations.visibleTask(user, orgId: orgId, taskId: request.parameter("taskId"))))
    }
}
