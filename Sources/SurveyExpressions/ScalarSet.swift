/// A set of Unicode scalars a regex matches at one position: a character class, `\d`, `.`, ...
/// The shorthand classes are Unicode-aware, as on Android, where ODK Collect runs
/// (java.util.regex there is ICU and always uses Unicode character classes): `\d` is any
/// decimal digit, `\w` letters, marks, digits and connectors, `\s` White_Space.
struct ScalarSet: Sendable, Equatable {
    enum Item: Sendable, Equatable {
        case range(UInt32, UInt32)
        case property(Property, negated: Bool)
    }

    enum Property: Sendable, Equatable {
        case digit, word, space, horizontalSpace, verticalSpace
        /// Java's `.`: everything but a line terminator.
        case notLineTerminator
        case alphabetic, alphanumeric, uppercase, lowercase, ascii, hexDigit
        /// A bit per Unicode general category, in the order of `ScalarSet.categoryBit`.
        case categories(UInt32)
    }

    var items: [Item]
    var negated: Bool

    func contains(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        for item in items {
            switch item {
            case .range(let lo, let hi):
                if v >= lo && v <= hi { return !negated }
            case .property(let p, let not):
                if ScalarSet.has(p, c) != not { return !negated }
            }
        }
        return negated
    }

    static func has(_ p: Property, _ c: Unicode.Scalar) -> Bool {
        let v = c.value
        switch p {
        case .digit:
            if v < 0x80 { return v >= 0x30 && v <= 0x39 }
            return c.properties.generalCategory == .decimalNumber
        case .word:
            return isWord(c)
        case .space:
            if v < 0x80 { return v == 0x20 || (v >= 0x09 && v <= 0x0D) }
            return c.properties.isWhitespace
        case .horizontalSpace:
            return v == 0x20 || v == 0x09 || v == 0xA0 || v == 0x1680 || v == 0x180E || (v >= 0x2000 && v <= 0x200A)
                || v == 0x202F || v == 0x205F || v == 0x3000
        case .verticalSpace:
            return (v >= 0x0A && v <= 0x0D) || v == 0x85 || v == 0x2028 || v == 0x2029
        case .notLineTerminator:
            return !isLineTerminator(c)
        case .alphabetic:
            return c.properties.isAlphabetic
        case .alphanumeric:
            return c.properties.isAlphabetic || has(.digit, c)
        case .uppercase:
            return c.properties.isUppercase
        case .lowercase:
            return c.properties.isLowercase
        case .ascii:
            return v < 0x80
        case .hexDigit:
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x46) || (v >= 0x61 && v <= 0x66)
        case .categories(let mask):
            return mask & (1 << categoryBit(c.properties.generalCategory)) != 0
        }
    }

    /// Unicode's \w (UTS #18 Annex C): alphabetic, marks, decimal digits, connector punctuation,
    /// join controls. For `\w` and the word boundaries `\b`.
    static func isWord(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v < 0x80 {
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
        }
        let p = c.properties
        if p.isAlphabetic || p.isJoinControl { return true }
        switch p.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return false
        }
    }

    /// Java's line terminators: \n, \r, U+0085, U+2028, U+2029.
    static func isLineTerminator(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        return v == 0x0A || v == 0x0D || v == 0x85 || v == 0x2028 || v == 0x2029
    }

    // MARK: - General categories

    private static let categoryOrder: [Unicode.GeneralCategory] = [
        .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
        .nonspacingMark, .spacingMark, .enclosingMark,
        .decimalNumber, .letterNumber, .otherNumber,
        .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
        .finalPunctuation, .otherPunctuation,
        .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol,
        .spaceSeparator, .lineSeparator, .paragraphSeparator,
        .control, .format, .surrogate, .privateUse, .unassigned,
    ]

    private static let categoryCodes = [
        "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
        "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
        "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn",
    ]

    static func categoryBit(_ category: Unicode.GeneralCategory) -> UInt32 {
        UInt32(categoryOrder.firstIndex(of: category) ?? 29)
    }

    /// The mask of a one- or two-letter category name (`L`, `Lu`, `LC`), or nil.
    static func categoryMask(_ name: String) -> UInt32? {
        if name == "LC" || name == "L&" { return 0b111 }
        var mask: UInt32 = 0
        for (i, code) in categoryCodes.enumerated() where code == name || (name.count == 1 && code.hasPrefix(name)) {
            mask |= 1 << UInt32(i)
        }
        return mask == 0 ? nil : mask
    }

    /// `\p{...}` names: general categories (`L`, `Lu`, `IsL`, `gc=Lu`, `general_category=Lu`),
    /// the POSIX classes Java names (`Alpha`, `Digit`, `Alnum`, `Upper`, `Lower`, `Punct`,
    /// `Space`, `XDigit`, `ASCII`, ...) in their Unicode sense, and a few binary properties
    /// (`IsAlphabetic`, `IsLetter`, `IsDigit`, `IsUppercase`, `IsLowercase`, `IsWhite_Space`).
    /// Scripts and blocks are not supported.
    static func property(named raw: String) -> Property? {
        var name = raw
        for prefix in ["general_category=", "gc=", "Is"] where name.hasPrefix(prefix) {
            name = String(name.dropFirst(prefix.count))
            break
        }
        if let mask = categoryMask(name) { return .categories(mask) }
        switch name.lowercased() {
        case "alpha", "alphabetic": return .alphabetic
        case "letter": return categoryMask("L").map { .categories($0) }
        case "digit": return .digit
        case "alnum": return .alphanumeric
        case "upper", "uppercase": return .uppercase
        case "lower", "lowercase": return .lowercase
        case "punct", "punctuation": return categoryMask("P").map { .categories($0) }
        case "space", "white_space", "whitespace": return .space
        case "blank": return .horizontalSpace
        case "cntrl", "control": return categoryMask("Cc").map { .categories($0) }
        case "xdigit": return .hexDigit
        case "ascii": return .ascii
        case "word": return .word
        default: return nil
        }
    }
}
