// Package deploytest checks the deployment files without a Docker engine or a
// cluster: the gateway route table against the contract's endpoint list, the
// Helm chart rendered and decoded strictly into Kubernetes API types, the docker
// compose file loaded with the compose-spec loader, the Dockerfile's shape, and
// the layering the tree relies on (stores and business packages import no HTTP).
//
// Run: cd deploy/deploytest && go test ./...   (-update rewrites golden files)
package deploytest
