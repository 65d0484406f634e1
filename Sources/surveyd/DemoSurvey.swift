import SurveyDomain
import SurveyServer
import SurveyStorage

/// The demo's household survey, created and published through the API's own routes.
enum DemoSurvey {
    static let definition: JSONValue = [
        "title": "Household water survey",
        "questions": [
            ["id": "household_size", "type": "integer", "label": "People in the household", "required": true, "minimum": 1, "maximum": 50],
            ["id": "water_source", "type": "select_one", "label": "Main water source", "required": true,
             "choices": ["piped", "well", "borehole", "river", "rain", "vendor"]],
            ["id": "notes", "type": "text", "label": "Notes", "maxLength": 500],
            ["id": "location", "type": "geopoint", "label": "Where"],
            ["id": "photo", "type": "file", "label": "Photo of the source", "accept": ["image/jpeg", "image/png"], "maxBytes": 10_000_000],
        ],
    ]

    struct Published { let versionId: String; let contentHash: String }

    static func publish(app: App, base: String, orgId: String, adminToken: String) throws -> Published {
        let survey = app.respond(method: "POST", path: "/v1/orgs/\(orgId)/surveys", token: adminToken,
                                 body: ["title": "Household water survey", "reviewRequired": true])
        guard survey.status == 201, let surveyId = survey.body?["surveyId"]?.stringValue else {
            throw MaintenanceError("demo: creating the survey answered \(survey.status)")
        }
        let version = app.respond(method: "POST", path: "/v1/orgs/\(orgId)/surveys/\(surveyId)/versions", token: adminToken,
                                  body: ["definition": definition])
        guard version.status == 201, let id = version.body?["surveyVersionId"]?.stringValue,
              let hash = version.body?["contentHash"]?.stringValue else {
            throw MaintenanceError("demo: publishing the version answered \(version.status)")
        }
        return Published(versionId: id, contentHash: hash)
    }
}
