/// One schema step, known by its name: `schema_migrations` records the names applied, so a step
/// is found applied or not by name, wherever it stands in the list. Each engine's text is written
/// out: the same text for both (`sql:`), PostgreSQL's own where the engines differ (`postgres:`),
/// or a step only PostgreSQL has (`postgresOnly:`), which SQLite records with nothing to do.
struct Migration: Sendable {
    let name: String
    /// What SQLite runs; nil: nothing (the step is recorded all the same).
    let sqlite: String?
    /// What PostgreSQL runs; nil: nothing.
    let postgres: String?

    /// `postgres`: PostgreSQL's text where it differs from SQLite's (nil: the same text).
    init(_ name: String, sql: String, postgres: String? = nil) {
        self.name = name
        sqlite = sql
        self.postgres = postgres ?? sql
    }

    /// A step for what SQLite keeps outside the database or in memory (files, counters of
    /// requests in flight across processes).
    init(_ name: String, postgresOnly sql: String) {
        self.name = name
        sqlite = nil
        postgres = sql
    }

    /// A step for what only SQLite keeps in the database (a full-text index PostgreSQL does not have).
    init(_ name: String, sqliteOnly sql: String) {
        self.name = name
        sqlite = sql
        postgres = nil
    }

    /// The statements this engine runs for the step; nil when it has nothing to do.
    func sql(for dialect: SQLDialect) -> String? {
        dialect == .postgres ? postgres : sqlite
    }
}
