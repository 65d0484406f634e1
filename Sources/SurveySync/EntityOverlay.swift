import Foundation

/// The list a person sees on the phone: the server's copy, then the phone's captured changes
/// the copy does not show yet, applied in capture order as the server will apply them (a create
/// of an entity that exists changes nothing; given properties replace theirs; an empty label
/// keeps the label).
enum EntityOverlay {
    static func entities(server: [ServerEntity], pending: [CapturedEntityChange]) -> [LocalEntity] {
        var order = server.map(\.id)
        var byId: [String: LocalEntity] = [:]
        for e in server {
            byId[e.id] = LocalEntity(id: e.id, label: e.label, properties: e.properties, version: e.version, isLocal: false,
                                     hasLocalChanges: false, trunkVersion: e.version, branchId: nil, startsBranch: true)
        }
        for change in pending {
            guard let current = byId[change.id] else {
                // Registered on the phone; an update of an entity the phone has no copy of shows nothing.
                guard change.create else { continue }
                order.append(change.id)
                byId[change.id] = LocalEntity(id: change.id, label: nonEmpty(change.label) ?? change.id,
                                              properties: change.properties.filter { !$0.value.isEmpty }, version: 1, isLocal: true,
                                              hasLocalChanges: true, trunkVersion: nil, branchId: nil, startsBranch: true)
                continue
            }
            guard change.update else { continue }
            var properties = current.properties
            for (name, value) in change.properties { properties[name] = value.isEmpty ? nil : value }
            byId[change.id] = LocalEntity(id: change.id, label: nonEmpty(change.label) ?? current.label, properties: properties,
                                          version: current.version + 1, isLocal: current.isLocal, hasLocalChanges: true,
                                          trunkVersion: change.branchId == nil ? current.trunkVersion : change.trunkVersion,
                                          branchId: change.branchId, startsBranch: false)
        }
        return order.compactMap { byId[$0] }
    }

    private static func nonEmpty(_ s: String?) -> String? { s.flatMap { $0.isEmpty ? nil : $0 } }
}
