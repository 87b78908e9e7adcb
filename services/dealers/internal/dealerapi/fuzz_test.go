package dealerapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/dealerapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/dealers/search with
// the database offline (resourcetest.FuzzSearchBody): never a 500 for a
// client's mistake; an empty userIds filter is answered without the store.
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := dealer.NewService(dealerdb.New(off.Pool), off.Users(), "2026")
	h := dealerapi.New(svc, off.Paginator("dealers.search"), off.Log, func(string) []gin.HandlerFunc { return nil })
	resourcetest.FuzzSearchBody(f, resourcetest.Router(h.Register), "/api/v0/dealers/search", resourcetest.UserIDsSearchSeeds, true)
}
