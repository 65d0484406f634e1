import SurveyDomain
import SurveyStorage

/// An entity list as one collector's phone receives it with one survey's form (Docs/entities.md):
/// the whole list, or, when the survey's `entityListScope` is `assigned`, only the entities that
/// collector's open tasks of the survey name. Its manifest hash names that copy, so a phone
/// fetches it again exactly when it may have changed: an entity or property of the list changed
/// (the list's revision), or a task of theirs was assigned or completed (the entities named).
public struct EntityListCopy: Sendable {
    public let list: EntityListRecord
    /// The survey whose form reads the list.
    public let surveyId: String
    /// The collector whose open tasks narrow the copy; nil: the whole list.
    public let assignee: String?
    /// The manifest's hash, hex (the manifest writes `md5:` before it); it need not be the md5 of the CSV bytes.
    public let md5: String

    /// The copy `collector` receives of `list` with `survey`'s form, read in `db`.
    init(_ list: EntityListRecord, survey: SurveyRecord, collector: String, in db: ReadContext) throws {
        self.list = list
        surveyId = survey.surveyId
        guard survey.entityListScope == .assigned else {
            assignee = nil
            md5 = OpenRosaForms.entityListMD5(orgId: survey.orgId, list)
            return
        }
        assignee = collector
        let named = try db.assignedEntityIds(orgId: survey.orgId, surveyId: survey.surveyId, assignee: collector, list: list.name)
        var digest = Digest(.md5)
        digest.update(Array("entity-list-assigned\n\(survey.orgId)\n\(list.name)\n\(list.revision)\n\(survey.surveyId)\n\(collector)\n".utf8))
        for id in named { digest.update(Array((id + "\n").utf8)) }
        md5 = Hex.encode(digest.finalize())
    }
}
