import SurveyDomain
import SurveyStorage

/// An entity list as the CSV ODK apps read (`select_one_from_file households.csv`, Docs/entities.md):
/// `name` (the entity's id), `label`, `__version`, `__trunkVersion`, `__branchId`, then the list's
/// properties in the order forms added them; one line per entity that is not deleted, in id
/// order. Read from one snapshot through a cursor and written a chunk at a time, so memory stays
/// flat however long the list. Values are written as stored (no formula guard: phones read them
/// as data, and an entity id must come back exactly).
public final class EntityListCSV: ExportProducer {
    private let snapshot: Snapshot
    private let cursor: RowCursor
    private let properties: [String]
    private var header: [String]?

    /// A collector's copy of the list for a survey whose scope is `assigned`: only the entities
    /// their open tasks of that survey name.
    public struct Assignment: Sendable, Equatable {
        public let surveyId: String
        public let assignee: String
        public init(surveyId: String, assignee: String) { self.surveyId = surveyId; self.assignee = assignee }
    }

    /// Reads the list in `snapshot` (closed with the producer), narrowed to `assignment` when
    /// there is one. 404 when the list does not exist.
    public init(snapshot: Snapshot, orgId: String, list: String, assignment: Assignment? = nil) throws {
        self.snapshot = snapshot
        guard let record = try snapshot.read.entityList(orgId: orgId, name: list) else { throw ApiError.notFound() }
        properties = record.properties
        header = Self.header(record)
        cursor = try assignment.map { try Self.rows(snapshot, orgId: orgId, list: list, assignment: $0) }
            ?? Self.rows(snapshot, orgId: orgId, list: list)
    }

    /// The columns: the entity's id, label and version, the phone's own two, then the properties.
    static func header(_ list: EntityListRecord) -> [String] {
        ["name", "label", "__version", "__trunkVersion", "__branchId"] + list.properties
    }

    static func rows(_ snapshot: Snapshot, orgId: String, list: String) throws -> RowCursor {
        try snapshot.rows("""
            SELECT entity_id, label, version, properties FROM entities
            WHERE org_id = ? AND list_name = ? AND deleted_at IS NULL ORDER BY entity_id
            """, [.text(orgId), .text(list)])
    }

    /// The entities of the list named by the assignee's open tasks of the survey, joined in the
    /// database so that the copy streams like the whole list.
    static func rows(_ snapshot: Snapshot, orgId: String, list: String, assignment: Assignment) throws -> RowCursor {
        try snapshot.rows("""
            SELECT entity_id, label, version, properties FROM entities
            WHERE org_id = ? AND list_name = ? AND deleted_at IS NULL AND entity_id IN (
                SELECT entity_id FROM tasks
                WHERE org_id = ? AND assignee_user_id = ? AND survey_id = ? AND entity_list = ? AND entity_id IS NOT NULL AND state = ?)
            ORDER BY entity_id
            """, [.text(orgId), .text(list), .text(orgId), .text(assignment.assignee), .text(assignment.surveyId), .text(list),
                  .text(TaskState.open.rawValue)])
    }

    /// A row's fields, in the header's order.
    static func fields(_ row: Row, properties: [String]) throws -> [String] {
        let values = try JSONParser.parse(Array(try row.string("properties").utf8)).objectValue ?? [:]
        var fields = [try row.string("entity_id"), try row.string("label"), String(try row.int("version")), "", ""]
        for p in properties { fields.append(values[p]?.stringValue ?? "") }
        return fields
    }

    public func produce(into out: inout [UInt8]) throws -> Bool {
        if let header {
            CSVEncoder.line(header, into: &out)
            self.header = nil
        }
        while out.count < chunk {
            guard let row = try cursor.next() else { close(); return false }
            CSVEncoder.line(try Self.fields(row, properties: properties), into: &out)
        }
        return true
    }

    public func close() { snapshot.close() }
}
