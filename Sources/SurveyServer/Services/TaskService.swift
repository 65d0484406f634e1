import SurveyDomain
import SurveyHTTP
import SurveyStorage

/// Field tasks: assigned by admins, completed only by the response that completes them.
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

    /// A task the caller may know of: admins and reviewers see every task; a collector only
    /// those assigned to them — any other is exactly the 404 of a task that does not exist.
    static func visibleTask(_ services: Services, user: UserRecord, orgId: String, taskId: String) throws -> TaskRecord {
        guard let t = try services.database.read({ try $0.task(orgId: orgId, taskId: taskId) }),
              user.has(.admin) || user.has(.reviewer) || t.assigneeUserId == user.userId else {
            throw ApiError(.notFound, "No such resource.")
        }
        return t
    }

    struct NewTask: Sendable {
        let task: TaskRecord
        let createdBy: String
    }

    func create(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return try services.keyedWrite(request, orgId: orgId, caller: user.userId, target: "", prepare: {
            let body = try JSONBody(request)
            let title = try body.string("title")
            let surveyId = try body.string("surveyId")
            let assignee = try body.string("assigneeUserId")
            let notes = try body.optionalString("notes")
            let dueAt = try body.optionalTimestamp("dueAt")
            var errors: [FieldError] = []
            if title.isEmpty || title.count > 500 { errors.append(FieldError(path: "title", message: "1 to 500 characters")) }
            if try services.database.read({ try $0.survey(orgId: orgId, surveyId: surveyId) }) == nil {
                errors.append(FieldError(path: "surveyId", message: "no such survey in this organization"))
            }
            let assigneeUser = try services.database.read { try $0.user(assignee) }
            if assigneeUser?.orgId != orgId || assigneeUser?.active != true || assigneeUser?.has(.collector) != true {
                errors.append(FieldError(path: "assigneeUserId", message: "not an active collector of this organization"))
            }
            guard errors.isEmpty else { throw ApiError(.validationFailed, "The task is not valid.", errors: errors) }
            let now = services.clock.nowMillis()
            return NewTask(task: TaskRecord(taskId: Ids.make("tsk", nowMillis: now), orgId: orgId, title: title, surveyId: surveyId,
                                            assigneeUserId: assignee, dueAt: dueAt, notes: notes, state: "open", createdAt: now,
                                            completedAt: nil, completedBy: nil, responseId: nil),
                           createdBy: user.userId)
        }, write: { new, tx in
            try tx.createTask(new.task, createdBy: new.createdBy)
            let stored = try tx.read.task(orgId: orgId, taskId: new.task.taskId)!
            return .created("/v1/orgs/\(orgId)/tasks/\(stored.taskId)", Self.taskJSON(stored))
        })
    }

    func list(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        let page = try Page(request)
        let all = user.has(.admin) || user.has(.reviewer)
        let rows = try services.database.read { try $0.tasks(orgId: orgId, assignee: all ? nil : user.userId, after: page.after, limit: page.limit) }
        return .json(200, page.render(rows, id: \.taskId, item: Self.taskJSON))
    }

    func get(_ context: RequestContext, _ request: HTTPRequest) throws -> HTTPResponse {
        let orgId = request.parameter("orgId")
        let user = try context.member()
        return .json(200, Self.taskJSON(try Self.visibleTask(services, user: user, orgId: orgId, taskId: request.parameter("taskId"))))
    }
}
