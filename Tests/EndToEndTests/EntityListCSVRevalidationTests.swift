import Foundation
import Testing
import SurveyDomain

/// `GET …/entity-lists/{name}/entities.csv` is revalidated as devices keep their copy
/// (Docs/entities.md): its `ETag` is the list's revision hash (the manifest's `md5:`), and a
/// matching `If-None-Match` is a bodiless 304 until an entity of the list changes.
@Suite struct EntityListCSVRevalidationTests {
    @Test func theCSVCarriesTheRevisionHashAndAMatchingIfNoneMatchIsNotModified() throws {
        let f = try Fixture()
        let lists = "/v1/orgs/\(f.orgId)/entity-lists"
        let created = try f.client.post(lists, token: f.adminToken, ["name": "households", "properties": ["village"]],
                                        headers: ["Idempotency-Key": "etag-list-0001"])
        #expect(created.status == 201, "\(created.text)")
        let csv = lists + "/households/entities.csv"

        let first = try f.client.get(csv, token: f.collectorToken)
        #expect(first.status == 200)
        #expect(first.text == "name,label,__version,__trunkVersion,__branchId,village\r\n")
        let etag = try #require(first.header("etag"))
        #expect(etag.range(of: #"^"md5:[0-9a-f]{32}"$"#, options: .regularExpression) != nil, "\(etag)")

        // The same revision: 304 without a body, for the tag alone, in a list, weak, or `*`.
        for header in [etag, "\"md5:0\", \(etag)", "W/\(etag)", "*"] {
            let again = try f.client.request("GET", csv, token: f.collectorToken, headers: ["If-None-Match": header])
            #expect(again.status == 304, "\(header)")
            #expect(again.body.isEmpty)
            #expect(again.header("etag") == etag)
        }
        #expect(try f.client.request("GET", csv, token: f.collectorToken, headers: ["If-None-Match": "\"md5:0\""]).status == 200)

        // An entity created: a new tag, and the old one fetches the new rows.
        let entity = try f.client.post(lists + "/households/entities", token: f.adminToken,
                                       ["id": "4b6f7c1e-2d3a-4e5f-8a9b-0c1d2e3f4a5b", "label": "Ada's", "properties": ["village": "Kisii"]],
                                       headers: ["Idempotency-Key": "etag-entity-0001"])
        #expect(entity.status == 201, "\(entity.text)")
        let changed = try f.client.request("GET", csv, token: f.collectorToken, headers: ["If-None-Match": etag])
        #expect(changed.status == 200)
        #expect(changed.text.hasSuffix("4b6f7c1e-2d3a-4e5f-8a9b-0c1d2e3f4a5b,Ada's,1,,,Kisii\r\n"), "\(changed.text)")
        let newTag = try #require(changed.header("etag"))
        #expect(newTag != etag)
        #expect(try f.client.request("GET", csv, token: f.collectorToken, headers: ["If-None-Match": newTag]).status == 304)
        // A list that does not exist is still 404, whatever the tag.
        #expect(try f.client.request("GET", lists + "/trees/entities.csv", token: f.collectorToken, headers: ["If-None-Match": "*"]).status == 404)
    }
}
