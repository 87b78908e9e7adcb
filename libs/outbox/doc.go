// Package outbox is the transactional outbox of the producing services
// (users, volunteers, registrations, dealers): a change and its events are
// committed in one transaction, and a relay inside the service's serve process hands
// the committed events, rendered as the read API renders their objects, to
// the auth service, which fans them out to webhook subscriptions.
//
// # Writing events
//
// Add inserts events into the table "outbox" in the caller's transaction
// (the tables are created by this package's migration,
// migrations/0002_outbox.up.sql: each producing service's migration set,
// MigrationSet, takes it as its version 2, so the tables are the same in
// each; the tests of this package create theirs from it): a rolled-back change
// leaves no event, a committed one always has its events. Each row gets a
// new event id (gen_random_uuid()), its commit-time clock
// (clock_timestamp()), the W3C traceparent of the span in the context
// (through the global OTel propagator; none outside a trace), and the
// payload: a JSON snapshot of the business object as committed. Up to a few
// dozen events are inserted with one statement, more with COPY (an import
// may write 100,000); the transaction notifies channel "outbox" once, which
// wakes the relay at commit.
//
// Events of one resource (Event.Resource, "volunteer:2026:1001") must be
// added after the resource's row is locked by the transaction (an UPDATE,
// DELETE, SELECT ... FOR UPDATE, or the unique index of an INSERT): then the
// order of their ids is the order in which they were committed, which is the
// order in which the relay publishes them.
//
// # Relaying
//
// A relay (Relay.Start) loops: in one transaction it takes
// pg_try_advisory_xact_lock (so that one replica of the service relays at a
// time and batches never overlap), reads the oldest BatchSize rows by id,
// renders them (Render, supplied by the service: the read API's own render
// function, with cross-service data fetched in one batch), publishes them in
// id order (Publish: authapi.Client.PublishEvents; a batch over
// MaxPublishBytes, 512 KiB, in several calls, so that it fits auth's body
// limit), deletes them and commits. Any error (database, render, publish)
// rolls back: the rows stay and are published again, with the same event
// ids, on the next attempt, which auth deduplicates. Delivery to auth is
// therefore at least once, in commit order per resource. Failed attempts
// back off exponentially with jitter up to MaxBackoff (30 s); a notification
// on channel "outbox" (LISTEN on a dedicated connection, reconnected when
// lost) wakes the relay early, the poll interval (1 s) is the fallback.
//
// A row that can never be rendered (Render reports it in a *BadRows: its
// payload does not decode, a bug of the release that wrote it) does not
// block the others: the batch's other rows are published, and the bad row is
// moved, in the same transaction, to the table "outbox_dead" with the error
// (logged with its event id, type and resource, never its payload, and
// counted), where an operator can inspect it and move it back once a fixed
// release can render it. A transient failure (the users service down) must
// be returned as a plain error instead: the whole batch is retried.
//
// # Observability
//
// Metrics (on Config.Metrics): eventreg_outbox_relayed_total{event},
// eventreg_outbox_relay_errors_total, eventreg_outbox_dead_total{event} and
// eventreg_outbox_oldest_seconds (the age of the oldest pending row, 0 when
// none; updated after every attempt, by every replica). Each batch is one
// span ("outbox relay") linked to the traces of its events' changes.
package outbox
