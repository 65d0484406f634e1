import Foundation
import FoundationXML
import Testing
import SurveyDomain

/// An entity list's OData feed (`…/entity-lists/{name}.svc`) on a real server: the service
/// document, `$metadata` as CSDL, and `Entities` a page at a time by `@odata.nextLink` — every
/// entity that is not deleted exactly once, as the API stores it; `$filter`, `$select`; Basic
/// and bearer alike; what it does not support is 501, never ignored.
@Suite struct EntityListODataTests {
    @Test func theFeedServesEveryEntityOnceAPageAtATime() throws {
        let p = try EntityListTests.Published()
        let f = p.f
        let root = "/v1/orgs/\(f.orgId)/entity-lists/households.svc"
        var made: [String: (label: String, head: String)] = [:]
        for i in 1...7 {
            let id = String(format: "00000000-0000-4000-8000-%012d", i)
            let r = try f.client.request("POST", "/v1/orgs/\(f.orgId)/entity-lists/households/entities", token: f.adminToken,
                                         json: ["id": .string(id), "label": .string("Household \(i)"), "properties": ["head": .string("Head \(i)"), "members": .number(Double(i))]],
                                         headers: ["Idempotency-Key": "odata-entity-\(i)-key"])
            #expect(r.status == 201, "\(r.text)")
            made[id] = ("Household \(i)", "Head \(i)")
        }
        let deleted = String(format: "00000000-0000-4000-8000-%012d", 4)
        #expect(try f.client.request("DELETE", "/v1/orgs/\(f.orgId)/entity-lists/households/entities/\(deleted)", token: f.adminToken,
                                     headers: ["Idempotency-Key": "odata-entity-delete-key"]).status == 204)
        made[deleted] = nil

        let service = try f.client.get(root, token: f.reviewerToken)
        #expect(service.status == 200 && service.header("odata-version") == "4.0", "\(service.text)")
        #expect(service.json?["value"]?.arrayValue?.map { $0["name"]?.stringValue } == ["Entities"])

        let metadata = try f.client.get(root + "/$metadata", token: f.reviewerToken)
        #expect(metadata.status == 200 && metadata.header("content-type") == "application/xml")
        let csdl = try XMLDocument(data: Data(metadata.body))
        let names = try csdl.nodes(forXPath: "//*[local-name()='EntityType']/*[local-name()='Property']/@Name").compactMap(\.stringValue)
        #expect(names.starts(with: ["__id", "label", "__system"]) && Set(names).isSuperset(of: ["head", "members"]), "\(names)")
        #expect(try csdl.nodes(forXPath: "//*[local-name()='EntitySet'][@Name='Entities']").count == 1)

        // Two rows a page, counted on every page; the links carry the options.
        var url: String? = root + "/Entities?$count=true"
        var rows: [JSONValue] = []
        var pages = 0
        while let next = url {
            let path = next.hasPrefix("http") ? String(next.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : next
            let page = try f.client.request("GET", path, token: f.reviewerToken, headers: ["Prefer": "odata.maxpagesize=2"])
            #expect(page.status == 200 && page.header("preference-applied") == "odata.maxpagesize=2", "\(page.text)")
            #expect(page.json?["@odata.count"] == 6)
            rows += page.json?["value"]?.arrayValue ?? []
            url = page.json?["@odata.nextLink"]?.stringValue
            pages += 1
        }
        #expect(pages == 3)
        #expect(rows.compactMap { $0["__id"]?.stringValue } == made.keys.sorted())
        for row in rows {
            let id = try #require(row["__id"]?.stringValue)
            #expect(row["label"]?.stringValue == made[id]?.label && row["head"]?.stringValue == made[id]?.head)
            #expect(row["__system"]?["version"] == 1 && row["__system"]?["conflict"] == .null)
        }

        // $top bounds the whole read, across pages.
        var topped: [JSONValue] = []
        url = root + "/Entities?$top=3"
        while let next = url {
            let path = next.hasPrefix("http") ? String(next.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) : next
            let page = try f.client.request("GET", path, token: f.reviewerToken, headers: ["Prefer": "odata.maxpagesize=2"])
            topped += page.json?["value"]?.arrayValue ?? []
            url = page.json?["@odata.nextLink"]?.stringValue
        }
        #expect(topped.count == 3)

        // $filter over the label, __system and the properties; $skip; counted as filtered.
        let one = try f.client.get(root + "/Entities?$filter=label%20eq%20'Household%202'&$count=true", token: f.reviewerToken)
        #expect(one.json?["value"]?.arrayValue?.compactMap { $0["head"]?.stringValue } == ["Head 2"] && one.json?["@odata.count"] == 1, "\(one.text)")
        let some = try f.client.get(root + "/Entities?$filter=__system/version%20eq%201%20and%20head%20ne%20'Head%201'&$skip=2", token: f.reviewerToken)
        #expect(some.json?["value"]?.arrayValue?.compactMap { $0["head"]?.stringValue } == ["Head 5", "Head 6", "Head 7"], "\(some.text)")
        let unknown = try f.client.get(root + "/Entities?$filter=colour%20eq%20'red'", token: f.reviewerToken)
        #expect(unknown.status == 400, "\(unknown.text)")
        // $select: the properties asked for, each row with its key.
        let selected = try f.client.get(root + "/Entities?$select=head,__system/version&$top=1", token: f.reviewerToken)
        #expect(selected.json?["value"]?.arrayValue == [["__id": .string(made.keys.sorted()[0]), "head": "Head 1", "__system": ["version": 1]]], "\(selected.text)")
        #expect(try f.client.get(root + "/Entities?$select=colour", token: f.reviewerToken).status == 400)

        // Not supported: 501 with OData's error body; a list that is not there: 404.
        let ordered = try f.client.get(root + "/Entities?$orderby=label", token: f.reviewerToken)
        #expect(ordered.status == 501 && ordered.json?["error"]?["message"]?.stringValue?.contains("$orderby") == true, "\(ordered.text)")
        #expect(try f.client.get("/v1/orgs/\(f.orgId)/entity-lists/trees.svc/Entities", token: f.reviewerToken).status == 404)

        // Basic with an API token reads the same; no credentials: 401 with the Basic challenge.
        let basic = try f.client.request("GET", root + "/Entities", headers: ODataTests.basic("excel", f.reviewerToken))
        #expect(basic.status == 200 && basic.json?["value"]?.arrayValue?.count == 6)
        let anonymous = try f.client.get(root + "/Entities")
        #expect(anonymous.status == 401 && anonymous.header("www-authenticate") == "Basic realm=\"surveyd\"")
    }
}
