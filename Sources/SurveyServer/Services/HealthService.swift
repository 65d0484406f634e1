import Foundation
import SurveyDomain
import SurveyHTTP

/// `/healthz` (the process answers), `/readyz` (the database takes writes), `/metrics` (operator).
struct HealthService {
    let services: Services

    func register(into router: inout Router) {
        services.publicRoute(&router, "GET", "/healthz") { _ in .json(200, ["status": "ok"]) }
        // Blocking: readiness is a real commit on the writer, at most one a second.
        let readiness = services.readiness
        services.publicRoute(&router, "GET", "/readyz", runs: .blocking) { _ in
            readiness.isReady()
                ? .json(200, ["status": "ready"])
                : .problem(ApiError(.storageUnavailable, "The database does not take writes."))
        }
        // The contract itself, one self-contained document (no auth: it holds no data).
        let openapi = HealthService.openAPIDocument()
        services.publicRoute(&router, "GET", "/v1/openapi.json") { _ in
            openapi.map { HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: $0) }
                ?? .problem(ApiError(.internalError, "The OpenAPI document is missing from this build."))
        }
        services.route(&router, "GET", "/metrics", .operatorOnly) { _, _ in
            .text(200, services.metrics.render(writer: services.database.writerStats, reads: services.database.readCount, webhookIdleLooks: services.dispatcher.idleLooks), contentType: "text/plain; version=0.0.4")
        }
    }
}

extension HealthService {
    static func openAPIDocument() -> [UInt8]? {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"),
              let data = try? Data(contentsOf: url) else { return nil }
        return Array(data)
    }
}
