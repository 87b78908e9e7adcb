package servicetoken_test

import (
	"fmt"

	"github.com/eventreg/eventreg/libs/servicetoken"
)

// The caller signs a token for the service it calls; the called service's
// internal listener accepts it only for itself.
func Example() {
	key := servicetoken.Config{Key: "the-key-every-service-of-the-deployment-shares"}

	// In auth (service.Runtime.Credentials, given to usersclient.NewClient).
	auth := servicetoken.NewSigner(key, "auth")
	token, _ := auth.Token("users")

	// In users (service.Start puts the middleware on the internal listener).
	users := servicetoken.NewVerifier(key, "users")
	caller, err := users.Verify(token)
	fmt.Println(caller, err)

	volunteers := servicetoken.NewVerifier(key, "volunteers")
	_, err = volunteers.Verify(token)
	fmt.Println(err)
	// Output:
	// auth <nil>
	// invalid service token
}
