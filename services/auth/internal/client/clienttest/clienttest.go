// Package clienttest is an in-memory client registry for the unit tests of the packages that look apps up.
package clienttest

import (
	"context"
	"errors"

	"github.com/eventreg/eventreg/services/auth/internal/client"
)

// Unreachable is the id whose lookup fails as a registry that cannot answer.
const Unreachable = 999

// Registry holds clients by id (client.Service's Lookup).
type Registry map[int64]client.Client

// Lookup returns the client id, client.ErrNotFound, or for Unreachable an
// error of a registry that cannot answer.
func (r Registry) Lookup(_ context.Context, id int64) (client.Client, error) {
	if id == Unreachable {
		return client.Client{}, errors.New("the client registry cannot answer")
	}
	cl, ok := r[id]
	if !ok {
		return client.Client{}, client.ErrNotFound
	}
	return cl, nil
}
