import SurveyDomain
import SurveyHTTP

/// `/healthz` (the process answers), `/readyz` (the database takes writes), `/metrics` (operator).
struct HealthService {
    let services: Services

    func register(into router: inout Router) {
        router.add("GET", "/healthz") { _ in .json(200, ["status": "ok"]) }
        router.add("GET", "/readyz") { _ in
            services.database.isWritable()
                ? .json(200, ["status": "ready"])
                : .problem(ApiError(.storageUnavailable, "The database does not take writes."))
        }
        router.add("GET", "/metrics") { request in
            try services.requireOperator(try services.authenticate(request))
            return .text(200, services.metrics.render(), contentType: "text/plain; version=0.0.4")
        }
    }
}
