// Package archive keeps test results: every run a host made or served,
// in SQLite by default (one file, no server, cgo-free) or in a shared
// PostgreSQL that a mesh of hosts writes to. One database/sql layer
// speaks to both with the same SQL; only the schema's DDL differs, in
// embedded forward-only migrations (migrations/DIALECT/NNN_name.sql)
// applied when the archive opens.
//
// A run is stored whole, as the JSON document tcpscope test --json
// writes, so a saved run shows and diagnoses exactly as when it ran.
// Beside it, columns per run, per direction and per finding carry what
// lists, filters and statistics need without parsing JSON. Each run is
// written in one transaction: an archive never holds half a run.
package archive
