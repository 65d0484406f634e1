/// The console's templates, one HTML file each under `Templates/`. A page names its template by
/// case, so a name that does not exist is a compile error, not a page that cannot render.
enum PageTemplate: Int, CaseIterable {
    case layout, signIn, invitation, message, home, queue, response, users, user, surveys, survey,
         tasks, exports, subscription, orgs, confirm, secret, webhooks, webhook, answers, outlineNode,
         viewFilters, data, summary, map, entityLists, entityList, entity

    /// The file's name, without `.html`.
    var file: String {
        switch self {
        case .signIn: "sign-in"
        case .outlineNode: "outline-node"
        case .viewFilters: "view-filters"
        case .entityLists: "entity-lists"
        case .entityList: "entity-list"
        default: String(describing: self)
        }
    }
}
