package testkit

import "context"

// PingPostgres connects to dsn and pings the server: whether a PostgreSQL
// answers there (e2e's devstack asks it of the default local server, as
// AdminURL does).
func PingPostgres(ctx context.Context, dsn string) error { return pingPostgres(ctx, dsn) }
