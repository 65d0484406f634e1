// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "surveyd",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "surveyd", targets: ["surveyd"]),
        // The client library collectors' apps embed (Docs/sdk.md) and its command-line example.
        .library(name: "SurveySync", targets: ["SurveySync"]),
        .executable(name: "surveysync", targets: ["surveysync"]),
    ],
    targets: [
        // C libraries from Debian packages; nothing is fetched.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Export formats: XLSX (constant-memory mode) and zip (written through a callback, so it streams).
        .systemLibrary(name: "CXLSXWriter", pkgConfig: "xlsxwriter", providers: [.apt(["libxlsxwriter-dev"])]),
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        // Console passwords: Argon2id.
        .systemLibrary(name: "CArgon2", pkgConfig: "libargon2", providers: [.apt(["libargon2-dev"])]),
        // QR codes of invitation links and app tokens in the console.
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // PostgreSQL, for several processes on one database: libpq.
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Webhook deliveries: a maintained HTTP client (TLS verified, no redirects).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // ODK XForms read into definitions: a maintained XML parser, never a hand-written one.
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),

        // Pure rules, no I/O.
        .target(name: "SurveyDomain", dependencies: ["CCrypto", "SurveyForms", "SurveyExpressions"]),
        .target(name: "SurveyForms", dependencies: ["SurveyExpressions"]),
        // The XLSForm/XForms expression engine, shared by the server and the SDK: no dependencies at all.
        .target(name: "SurveyExpressions"),
        // An ODK XForm (what pyxform writes) read into a version-2 definition, or refused by name; and
        // a definition written as the XForm that reads back into it.
        .target(name: "SurveyXForm", dependencies: ["SurveyForms", "SurveyExpressions", "CLibXML2"]),
        // SQLite, the single writer, the reader pool, migrations, repositories.
        .target(name: "SurveyStorage", dependencies: ["CSQLite", "CPostgres", "SurveyDomain"]),
        // The HTTP engine over libmicrohttpd; knows nothing about surveys.
        .target(name: "SurveyHTTP", dependencies: ["CMicroHTTPD", "SurveyDomain"]),
        // The operations every door calls (API, console, exports, webhooks): typed commands in,
        // typed outcomes out, the contract's order of checks. Knows nothing about HTTP.
        .target(name: "SurveyOperations", dependencies: ["SurveyStorage", "SurveyDomain", "SurveyXForm", "CArgon2"]),
        // Export formats (CSV, GeoJSON, XLSX, zip) over an export's snapshot; no HTTP.
        .target(name: "SurveyExports", dependencies: ["SurveyOperations", "SurveyStorage", "SurveyDomain", "CXLSXWriter", "CArchive"]),
        // The OData feed (Power BI, Excel, R, Python): a survey's tables as an OData v4 service over the
        // export's columns and cells; $metadata written with libxml2 (SurveyXForm's writer); no HTTP.
        .target(name: "SurveyOData", dependencies: ["SurveyExports", "SurveyOperations", "SurveyStorage", "SurveyDomain", "SurveyXForm"]),
        // The web console: server-rendered pages, sessions and forms over the same operations.
        .target(name: "SurveyConsole", dependencies: ["SurveyHTTP", "SurveyOperations", "SurveyExports", "SurveyStorage", "SurveyDomain", "CQRencode", "CZlib"],
                resources: [.copy("Templates"), .copy("Assets")]),
        // Webhook deliveries from the transactional outbox, through libcurl; no HTTP server side.
        .target(name: "SurveyWebhooks", dependencies: ["SurveyOperations", "SurveyStorage", "SurveyDomain", "CCurl"]),
        // The HTTP door: routes, decoding and rendering, the server's lifecycle.
        .target(name: "SurveyServer", dependencies: ["SurveyHTTP", "SurveyOperations", "SurveyExports", "SurveyOData", "SurveyConsole", "SurveyWebhooks", "SurveyStorage", "SurveyDomain", "CCrypto"],
                // The bundled OpenAPI document served at /v1/openapi.json (scripts/bundle_openapi.py).
                resources: [.copy("Resources/openapi.json")]),
        .executableTarget(name: "surveyd", dependencies: ["SurveyServer", "SurveyWebhooks"]),

        // SurveySync: Foundation, URLSession and SQLite only, no server module. Apple platforms have
        // SQLite3 and CryptoKit; elsewhere the Debian libraries through the same system targets.
        .target(name: "SurveySync", dependencies: [
            "SurveyForms",
            .target(name: "CSQLite", condition: .when(platforms: [.linux])),
            .target(name: "CCrypto", condition: .when(platforms: [.linux])),
        ]),
        .executableTarget(name: "surveysync", dependencies: ["SurveySync"]),

        // How the tests start child processes: posix_spawn, not Foundation's Process (SpawnedProcess.swift).
        .target(name: "TestProcesses", path: "Tests/TestProcesses"),
        .testTarget(name: "SurveyDomainTests", dependencies: ["SurveyDomain", "SurveyForms", "SurveyExpressions"]),
        .testTarget(name: "SurveyExpressionsTests", dependencies: ["SurveyExpressions"]),
        // Fixtures/: XForms pyxform 4.5.0 wrote from the XLSForms of make_xforms.py.
        .testTarget(name: "SurveyXFormTests", dependencies: ["SurveyXForm", "SurveyForms", "TestProcesses"], exclude: ["Fixtures"]),
        // Fixtures/: databases written by earlier builds, opened by the current one.
        .testTarget(name: "SurveyStorageTests", dependencies: ["SurveyStorage", "SurveyDomain"], exclude: ["Fixtures"]),
        .testTarget(name: "SurveyHTTPTests", dependencies: ["SurveyHTTP"]),
        .testTarget(name: "SurveyOperationsTests", dependencies: ["SurveyOperations", "SurveyStorage", "SurveyDomain"]),
        .testTarget(name: "SurveyExportsTests", dependencies: ["SurveyExports", "SurveyStorage", "SurveyDomain"]),
        .testTarget(name: "SurveySyncTests", dependencies: ["SurveySync", "TestProcesses"]),
        .testTarget(name: "SurveyWebhooksTests", dependencies: ["SurveyWebhooks"]),
        // Faults/: a C library the tests compile and preload into a real server to fail its file-system calls.
        .testTarget(name: "EndToEndTests", dependencies: ["SurveyServer", "SurveyOperations", "SurveyWebhooks", "SurveyStorage", "SurveyHTTP", "SurveyDomain", "TestProcesses"],
                    exclude: ["Faults"]),
    ]
)
