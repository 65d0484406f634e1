import Foundation

/// A value a template shows. Text is escaped wherever it is shown; only `html` — markup this
/// module rendered itself from another template — goes in as it is.
enum TemplateValue: Sendable {
    case text(String)
    case html(String)
    case flag(Bool)
    case list([[String: TemplateValue]])
}

/// A page template (a small Mustache subset): `{{name}}` shows a value, escaped; `{{#name}}…{{/name}}`
/// shows its inside when the value is true or non-empty text, once per item of a list (the
/// item's names over the outer ones); `{{^name}}…{{/name}}` when it is false, empty or missing.
/// There is no way to write a value unescaped in a template: the only markup that goes in as it
/// is, is a `.html` value.
struct Template: Sendable {
    private indirect enum Node: Sendable {
        case text(String)
        case value(String)
        case section(String, inverted: Bool, [Node])
    }

    private let nodes: [Node]

    init(_ source: String) throws {
        var rest = Substring(source)
        var stack: [(name: String, inverted: Bool, nodes: [Node])] = [("", false, [])]
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { stack[stack.count - 1].nodes.append(.text(String(rest[..<open.lowerBound]))) }
            guard let close = rest.range(of: "}}", range: open.upperBound..<rest.endIndex) else { throw TemplateError("an unclosed {{") }
            let tag = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            rest = rest[close.upperBound...]
            switch tag.first {
            case "#", "^":
                stack.append((String(tag.dropFirst()).trimmingCharacters(in: .whitespaces), tag.first == "^", []))
            case "/":
                let name = String(tag.dropFirst()).trimmingCharacters(in: .whitespaces)
                guard stack.count > 1, let top = stack.popLast(), top.name == name else { throw TemplateError("{{/\(name)}} closes nothing open") }
                stack[stack.count - 1].nodes.append(.section(name, inverted: top.inverted, top.nodes))
            default:
                stack[stack.count - 1].nodes.append(.value(tag))
            }
        }
        if !rest.isEmpty { stack[stack.count - 1].nodes.append(.text(String(rest))) }
        guard stack.count == 1, let root = stack.first else { throw TemplateError("{{#\(stack.last?.name ?? "")}} is never closed") }
        nodes = root.nodes
    }

    func render(_ values: [String: TemplateValue]) -> String {
        var out = ""
        Self.render(nodes, [values], into: &out)
        return out
    }

    private static func lookup(_ name: String, _ scopes: [[String: TemplateValue]]) -> TemplateValue? {
        for scope in scopes.reversed() { if let v = scope[name] { return v } }
        return nil
    }

    private static func render(_ nodes: [Node], _ scopes: [[String: TemplateValue]], into out: inout String) {
        for node in nodes {
            switch node {
            case .text(let t): out += t
            case .value(let name):
                switch lookup(name, scopes) {
                case .text(let t): out += HTML.escape(t)
                case .html(let h): out += h
                case .flag, .list, nil: break
                }
            case .section(let name, let inverted, let inside):
                let value = lookup(name, scopes)
                let shown: Bool
                switch value {
                case .flag(let b): shown = b
                case .text(let t): shown = !t.isEmpty
                case .html(let h): shown = !h.isEmpty
                case .list(let items): shown = !items.isEmpty
                case nil: shown = false
                }
                if inverted {
                    if !shown { render(inside, scopes, into: &out) }
                } else if case .list(let items) = value {
                    for item in items { render(inside, scopes + [item], into: &out) }
                } else if shown {
                    render(inside, scopes, into: &out)
                }
            }
        }
    }
}

struct TemplateError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = "template: " + d }
}

enum HTML {
    /// Text made safe for an element's content and for a quoted attribute value.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
