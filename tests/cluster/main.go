// Command qmcluster is the test control plane of Quartermaster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, built from Kubernetes' own Go modules at the
// pinned release, plus simulated nodes. One binary with a subcommand per component, as
// hyperkube was, so the three Kubernetes components share one compile and one link.
//
// It is test tooling only: the product stays Python. tests/cluster/build builds it,
// `python -m tests.cluster up DIR` runs it.
package main

import (
	"fmt"
	"os"
	_ "time/tzdata" // CronJob time zones, as the upstream mains import it

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/component-base/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

const usage = `usage: qmcluster COMPONENT [flags]

components:
  etcd                     an embedded etcd member (--data-dir, --listen-client, --listen-peer)
  kube-apiserver           Kubernetes' API server, upstream flags
  kube-controller-manager  Kubernetes' controller manager, upstream flags
  kube-scheduler           Kubernetes' scheduler, upstream flags
  kubectl                  kubectl of the same release
  nodes                    simulated nodes: register, heartbeat, run bound pods (--kubeconfig, --config)
  version                  the pinned Kubernetes version
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	component := os.Args[1]
	args := os.Args[2:]
	switch component {
	case "etcd":
		os.Exit(runEtcd(args))
	case "kube-apiserver":
		os.Exit(runCobra(apiserver.NewAPIServerCommand(), args))
	case "kube-controller-manager":
		os.Exit(runCobra(controllermanager.NewControllerManagerCommand(), args))
	case "kube-scheduler":
		os.Exit(runCobra(scheduler.NewSchedulerCommand(), args))
	case "kubectl":
		os.Exit(runKubectl(args))
	case "nodes":
		os.Exit(runNodes(args))
	case "version":
		fmt.Println(kubernetesVersion())
	default:
		fmt.Fprintf(os.Stderr, "qmcluster: unknown component %q\n%s", component, usage)
		os.Exit(2)
	}
}

func runCobra(command *cobra.Command, args []string) int {
	command.SetArgs(args)
	return cli.Run(command)
}

// kubernetesVersion is stamped by tests/cluster/build (-ldflags -X), as Kubernetes' own build does.
func kubernetesVersion() string {
	return version.Get().GitVersion
}

// runKubectl runs kubectl as its own main does: it reads os.Args itself (plugins, verbosity).
func runKubectl(args []string) int {
	os.Args = append([]string{"kubectl"}, args...)
	_, _ = logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args))
	if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
	return 0
}
