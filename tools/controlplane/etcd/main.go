// etcd's server, as the go.etcd.io/etcd/v3 module's main.go runs it (etcdmain.Main), from go.etcd.io/etcd/server/v3.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
