import Foundation
import SurveyDomain
import SurveyServer
import SurveyStorage

/// `serve --demo`: an organization, three users, a published survey, and what to try.
enum Demo {
    static func seed(app: App, base: String) throws {
        let admin = AdminCommands(database: app.database)
        let operatorToken = try admin.createOperator()
        let now = Timestamp.nowMillis()
        let orgId = try admin.createOrg(name: "Demo Field Team", expiresAt: now + 365 * 86_400_000)
        let (_, adminToken) = try admin.createUser(orgId: orgId, name: "Ada Admin", roles: ["admin"])
        let (_, collectorToken) = try admin.createUser(orgId: orgId, name: "Cole Collector", roles: ["collector"])
        let (_, reviewerToken) = try admin.createUser(orgId: orgId, name: "Rae Reviewer", roles: ["reviewer"])
        let published = try DemoSurvey.publish(app: app, base: base, orgId: orgId, adminToken: adminToken)
        print("""

        surveyd demo is running at \(base)
          organization   \(orgId)
          operator token \(operatorToken)
          admin token    \(adminToken)
          collector token \(collectorToken)
          reviewer token \(reviewerToken)
          survey version \(published.versionId) (contentHash \(published.contentHash))

        Try (the collector syncs a response):
          curl -s -X POST \(base)/v1/orgs/\(orgId)/responses -H 'Authorization: Bearer \(collectorToken)' -H 'Content-Type: application/json' -d '{"clientSubmissionId":"demo-0001","surveyVersionId":"\(published.versionId)","contentHash":"\(published.contentHash)","answers":{"household_size":4,"water_source":"well"}}'
        and the subscription:
          curl -s \(base)/v1/orgs/\(orgId)/subscription -H 'Authorization: Bearer \(collectorToken)'
        The web console (the review desk): open \(base)/console/ and sign in with the reviewer token
        under "API token" (or invite someone with an email and password: Docs/console.md).
        For the README walkthrough, paste:
          export ORG=\(orgId) OP=\(operatorToken) ADMIN=\(adminToken) COLLECTOR=\(collectorToken) REVIEWER=\(reviewerToken) VERSION=\(published.versionId) HASH=\(published.contentHash)
        Stop with Ctrl-C.
        """)
        fflush(nil)
    }
}
