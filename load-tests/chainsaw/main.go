// Command chainsaw is Kyverno's end-to-end test runner at the version go.mod
// pins, built by ./build: its root command, with controller-runtime's logger
// silenced as chainsaw's own entry point does.
package main

import (
	"os"

	"github.com/go-logr/logr"
	"github.com/kyverno/chainsaw/pkg/commands"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	log.SetLogger(logr.Discard())
	if err := commands.RootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
