/// Rewrites an XForm's XPath expression into the definition's XLSForm syntax: a path to a node of
/// the form (`/data/household/size`, `../age`, `current()/../region`) becomes `${size}`; literals,
/// numbers, operators, function calls and whitespace are copied.
/// Whatever has no counterpart (other instances, predicates on paths, attributes, unions) is
/// refused by name rather than guessed at; `pulldata('file', …)` is kept as it is written.
struct XPathTranslator {
    /// Absolute path of every group, repeat and question → its id.
    let ids: [String: String]

    enum Context {
        /// A bind's or a repeat's expression: `.` and relative paths start at `path`.
        case node(path: String)
        /// An itemset's filter: bare names are the choice's columns, `current()` is the question.
        case choiceFilter(questionPath: String)
    }

    private static let operatorNames: Set<String> = ["and", "or", "div", "mod"]

    func translate(_ source: String, context: Context, what: String) throws(XFormRefusal) -> String {
        let s = Array(source.unicodeScalars)
        var out = ""
        var i = 0
        // pyxform writes `${x}` as ` /data/x ` (a space either side): one space either side of a
        // path with spaces on both sides is dropped again, so the definition reads as the XLSForm was written.
        var dropNextSpace = false
        func emit(_ text: String) {
            dropNextSpace = false
            out += text
        }
        while i < s.count {
            let c = s[i]
            if c.properties.isWhitespace {
                if !dropNextSpace { out.unicodeScalars.append(c) }
                dropNextSpace = false
                i += 1
                continue
            }
            if c == "'" || c == "\"" {
                guard let end = s[(i + 1)...].firstIndex(of: c) else {
                    throw XFormRefusal("\(what): the expression \(source) has an unterminated string")
                }
                emit(String(String.UnicodeScalarView(s[i...end])))
                i = end + 1
                continue
            }
            if Self.isDigit(c) || (c == "." && i + 1 < s.count && Self.isDigit(s[i + 1])) {
                var j = i
                while j < s.count, Self.isDigit(s[j]) || s[j] == "." { j += 1 }
                emit(String(String.UnicodeScalarView(s[i..<j])))
                i = j
                continue
            }
            if c == "/" || c == "." || Self.isNameStart(c) {
                let (text, next) = try path(s, from: i, source: source, context: context, what: what)
                if text.hasPrefix("${"), let last = out.unicodeScalars.last, last.properties.isWhitespace,
                   next == s.count || s[next].properties.isWhitespace {
                    out.unicodeScalars.removeLast()
                    emit(text)
                    dropNextSpace = true
                } else {
                    emit(text)
                }
                i = next
                continue
            }
            switch c {
            case "(", ")", ",", "=", "<", ">", "+", "-", "*":
                emit(String(c)); i += 1
            case "!" where i + 1 < s.count && s[i + 1] == "=":
                emit("!="); i += 2
            case "[", "]":
                throw XFormRefusal("\(what): the expression \(source) filters a list with [...]; surveyd's expressions have no filters")
            case "@":
                throw XFormRefusal("\(what): the expression \(source) reads an attribute (@); surveyd's expressions do not")
            case "|":
                throw XFormRefusal("\(what): the expression \(source) joins node sets with |; surveyd's expressions do not")
            case "$":
                throw XFormRefusal("\(what): the expression \(source) uses an XPath variable ($); surveyd's expressions have none")
            default:
                throw XFormRefusal("\(what): the expression \(source) has '\(c)', which surveyd's expressions do not read")
            }
        }
        return out.trimmingWhitespace()
    }

    /// A path, a name or a function name starting at `start`; returns its translation and the index after it.
    private func path(_ s: [Unicode.Scalar], from start: Int, source: String, context: Context, what: String)
        throws(XFormRefusal) -> (String, Int)
    {
        var steps: [String] = []
        var i = start
        let absolute = s[i] == "/"
        if absolute { i += 1 }
        while i < s.count {
            var step = ""
            if s[i] == "." {
                step = (i + 1 < s.count && s[i + 1] == ".") ? ".." : "."
                i += step.unicodeScalars.count
            } else if Self.isNameStart(s[i]) {
                var j = i
                while j < s.count, Self.isNameChar(s[j]) || (s[j] == ":" && j + 1 < s.count && Self.isNameStart(s[j + 1])) { j += 1 }
                step = String(String.UnicodeScalarView(s[i..<j]))
                i = j
                var k = i
                while k < s.count, s[k].properties.isWhitespace { k += 1 }
                if k < s.count, s[k] == "(" {
                    // A function call: only `current()` may start a path.
                    guard steps.isEmpty, !absolute else {
                        throw XFormRefusal("\(what): the expression \(source) has a path step \(step)(), which surveyd cannot read")
                    }
                    if step == "current", k + 2 < s.count, s[k + 1] == ")", s[k + 2] == "/" {
                        steps.append("current()"); i = k + 3; continue
                    }
                    switch step {
                    case "instance":
                        throw XFormRefusal("\(what): the expression \(source) reads another instance with instance(...); surveyd's expressions read only the form's own answers")
                    case "current":
                        throw XFormRefusal("\(what): the expression \(source) uses current() outside a path; surveyd cannot read it")
                    default:
                        return (step, i) // the definition's check refuses a function it does not know
                    }
                }
            } else if s[i] == "@" {
                throw XFormRefusal("\(what): the expression \(source) reads an attribute (@); surveyd's expressions do not")
            } else {
                throw XFormRefusal("\(what): the expression \(source) has a path surveyd cannot read")
            }
            steps.append(step)
            guard i < s.count, s[i] == "/" else { break }
            i += 1
            if i < s.count, s[i] == "/" {
                throw XFormRefusal("\(what): the expression \(source) uses //, which surveyd's expressions do not read")
            }
        }
        var k = i
        while k < s.count, s[k].properties.isWhitespace { k += 1 }
        if k < s.count, s[k] == "[" {
            throw XFormRefusal("\(what): the expression \(source) filters a path with [...]; surveyd's expressions have no filters")
        }
        guard let first = steps.first else {
            throw XFormRefusal("\(what): the expression \(source) has an empty path")
        }
        if !absolute && steps.count == 1 {
            if first == "." || first == ".." || Self.operatorNames.contains(first) { return (first, i) }
            if case .choiceFilter = context { return (first, i) } // a column of the choice
        }
        let written = (absolute ? "/" : "") + steps.joined(separator: "/")
        var resolved: [String]
        if absolute {
            resolved = []
        } else {
            switch (context, first) {
            case (.node(let path), _) where first == "." || first == "..":
                resolved = Self.components(path)
            case (.choiceFilter(let questionPath), "current()"):
                resolved = Self.components(questionPath)
                steps.removeFirst()
            case (.node(let path), "current()"):
                resolved = Self.components(path)
                steps.removeFirst()
            default:
                throw XFormRefusal("\(what): the expression \(source) has a relative path \(written) that surveyd cannot resolve")
            }
        }
        for step in steps {
            switch step {
            case ".": continue
            case "..":
                guard resolved.popLast() != nil else { throw XFormRefusal("\(what): the expression \(source) climbs above the form's root with \(written)") }
            case "current()":
                throw XFormRefusal("\(what): the expression \(source) uses current() inside a path")
            default: resolved.append(step)
            }
        }
        let target = "/" + resolved.joined(separator: "/")
        guard let id = ids[target] else {
            throw XFormRefusal("\(what): the expression \(source) names \(target), which is not a question, group or repeat of the form")
        }
        return ("${\(id)}", i)
    }

    static func components(_ path: String) -> [String] {
        path.split(separator: "/").map(String.init)
    }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }
    private static func isNameStart(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || (c.value >= 0xC0 && c.properties.isAlphabetic)
    }
    private static func isNameChar(_ c: Unicode.Scalar) -> Bool {
        isNameStart(c) || isDigit(c) || c == "-" || c == "." || c.value == 0xB7
    }
}
