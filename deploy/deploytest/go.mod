module github.com/eventreg/eventreg/deploy/deploytest

go 1.26.0

require helm.sh/helm/v3 v3.19.5 // indirect
