package svcclient_test

import (
	"fmt"

	"github.com/eventreg/eventreg/libs/svcclient"
)

// A caller fills the user id into the pattern the callee registers.
func ExampleUserPath() {
	fmt.Println(svcclient.UserPath("/internal/users/:id/permissions", 1001))
	// Output: /internal/users/1001/permissions
}
