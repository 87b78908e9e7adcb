package registrationapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/registrations/internal/registration"
	"github.com/eventreg/eventreg/services/registrations/internal/registration/registrationdb"
	"github.com/eventreg/eventreg/services/registrations/internal/registrationapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/registration/search
// with the database offline (resourcetest.FuzzSearchBody); an empty userIds
// filter is the one body answered without the store: an empty page
// (decision 0041).
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := registration.NewService(registrationdb.New(off.Pool), off.Users(), "2026")
	h := registrationapi.New(svc, off.Paginator("registrations.search"), off.Log, noChains{})
	resourcetest.FuzzSearchBody(f, resourcetest.Router(h.Register), "/api/v0/registration/search", resourcetest.UserIDsSearchSeeds, true)
}

// noChains builds no middleware: the fuzzed handler is called without a token.
type noChains struct{}

func (noChains) ProtectedAndLimited(string) []gin.HandlerFunc                       { return nil }
func (noChains) ProtectedOrSelfAndLimited(string, string, string) []gin.HandlerFunc { return nil }
