/// Where a form's entity declarations sit among its nodes (Entities 2025.1): each at the root or
/// in a group or repeat, one per place, its saved questions inside it and not in a repeat nested
/// in it — so that one instance of the place (the form, or one instance of its repeat) holds one
/// entity's answers. A place inside two levels of repeats is not read yet.
struct EntityPlacement {
    private struct Place {
        /// Document order of the group or repeat.
        let order: Int
        /// The repeats at or above it, outermost first.
        let repeats: [String]
    }

    private var places: [String: Place] = [:]
    /// Each question's groups and repeats above it, and the repeats among them.
    private var questions: [String: (containers: Set<String>, repeats: [String])] = [:]

    init(_ nodes: [FormNode]) {
        var order = 0
        // Iterative, in document order.
        var stack: [(FormNode, containers: [String], repeats: [String])] = nodes.reversed().map { ($0, [], []) }
        while let (n, containers, repeats) = stack.popLast() {
            switch n.kind {
            case .question:
                if questions[n.id] == nil { questions[n.id] = (Set(containers), repeats) }
            case .group, .repeat:
                let inner = repeats + (n.isRepeat ? [n.id] : [])
                if places[n.id] == nil { places[n.id] = Place(order: order, repeats: inner) }
                order += 1
                stack += n.children.reversed().map { ($0, containers + [n.id], inner) }
            case .note:
                break
            }
        }
    }

    /// The innermost repeat at or above a group or repeat.
    func repeatHolding(_ container: String) -> String? { places[container]?.repeats.last }

    /// The declarations that sit where they may, the root's first and then in document order;
    /// what is wrong is appended to `errors` at each declaration's path.
    func place(_ entities: [EntityDeclaration], paths: [String], errors: inout [FieldError]) -> [EntityDeclaration] {
        var taken: Set<String> = [], rootTaken = false
        var placed: [(order: Int, EntityDeclaration)] = []
        for (e, at) in zip(entities, paths) {
            let before = errors.count
            var scope: [String] = []
            if let c = e.container {
                if let p = places[c] {
                    scope = p.repeats
                    if p.repeats.count > 1 {
                        errors.append(FieldError(path: "\(at).container", message: "\(c) is inside a repeat inside a repeat: surveyd reads entities of groups and repeats inside one repeat at most"))
                    }
                    if !taken.insert(c).inserted {
                        errors.append(FieldError(path: "\(at).container", message: "another entity of the form is declared in \(c): one entity per group or repeat"))
                    }
                } else {
                    errors.append(FieldError(path: "\(at).container", message: "names no group or repeat of the form"))
                }
            } else if rootTaken {
                errors.append(FieldError(path: "\(at).container", message: "another entity of the form is declared at its root: one entity per group or repeat"))
            } else {
                rootTaken = true
            }
            for s in e.saveTo {
                let q = questions[s.questionId]
                if let c = e.container {
                    guard let q, q.containers.contains(c), q.repeats == scope else {
                        errors.append(FieldError(path: "\(at).saveTo.\(s.questionId)", message: "names no question of \(c) (outside repeats nested in it)"))
                        continue
                    }
                } else if q == nil || q?.repeats.isEmpty == false {
                    errors.append(FieldError(path: "\(at).saveTo.\(s.questionId)", message: "names no question outside repeats"))
                }
            }
            guard errors.count == before else { continue }
            placed.append((e.container.flatMap { places[$0]?.order } ?? -1, e))
        }
        return placed.sorted { $0.order < $1.order }.map(\.1)
    }
}
