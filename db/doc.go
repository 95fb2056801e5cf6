// Package db is the services' common ground and nothing that stores: the
// error codes every service returns (Error, Errorf, the one field-error type
// InvalidFields), the Idempotency-Key in the context and Memoize for keyed
// scripts, the text rules every user-set text passes, and the bounds of a
// sale window. Views and db/model import it, so it imports no storage.
//
// Below it, one package per area (db/goods, db/redpacket, db/coupon,
// db/account, db/audit), each a Service over the shared db/backend, and the
// infrastructure they run on (db/backend, db/rdb, db/sqldb, db/live,
// db/outbound, db/inbox). docs/ARCHITECTURE.md has the map
// and the import rules that TestLayers checks.
package db
