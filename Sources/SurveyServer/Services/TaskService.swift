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

    func create(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = context.orgId
        let render: @Sendable (TaskRecord) -> HTTPResponse = { .created("/v1/orgs/\(orgId)/tasks/\($0.taskId)", $0.document) }
        let keyed = KeyedAnswer(request, render)
        let outcome = try services.operations.tasks.create(orgId: orgId, by: try context.member(), key: keyed.key) {
            let body = try JSONBody(request.body)
            return FieldTasks.NewTask(title: try body.string("title"), surveyId: try body.string("surveyId"),
                                      assigneeUserId: try body.string("assigneeUserId"), notes: try body.optionalString("notes"),
                                      dueAt: try body.optionalTimestamp("dueAt"), entityList: try body.optionalString("entityList"),
                                      entityId: try body.optionalString("entityId"))
        }
        return try keyed.answer(outcome)
    }

    func list(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let page = try Page(request)
        let rows = try services.operations.visibleTasks(user, orgId: orgId, after: page.after, limit: page.limit)
        return .json(200, page.render(rows, id: \.taskId, item: \.document))
    }

    func get(_ context: Admission, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return .json(200, try services.operations.visibleTask(user, orgId: orgId, taskId: request.parameter("taskId")).document)
    }
}
