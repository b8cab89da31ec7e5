package main

// Simulated nodes: what a kubelet does for the API server, without containers. Each node
// registers, renews its Lease and reports Ready; each pod the scheduler binds to it is
// reported Running through the status subresource, and a pod being deleted is removed once
// its grace period is over, as the kubelet does. Device allocation is the scheduler's
// (DRA); preparing devices is a driver's and is not simulated.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// nodeSpec is one simulated node as the --config file lists it.
type nodeSpec struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	CPU    string            `json:"cpu"`
	Memory string            `json:"memory"`
	Pods   string            `json:"pods"`
}

const heartbeatEvery = 10 * time.Second

func runNodes(args []string) int {
	flags := flag.NewFlagSet("nodes", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of an identity that may write nodes, leases and pod status (required)")
	configPath := flags.String("config", "", "JSON list of nodes: name, labels, cpu, memory, pods (required)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *kubeconfig == "" || *configPath == "" {
		fmt.Fprintln(os.Stderr, "nodes: --kubeconfig and --config are required")
		return 2
	}
	raw, err := os.ReadFile(*configPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodes: %v\n", err)
		return 2
	}
	var specs []nodeSpec
	if err := json.Unmarshal(raw, &specs); err != nil {
		fmt.Fprintf(os.Stderr, "nodes: %s: %v\n", *configPath, err)
		return 2
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodes: %v\n", err)
		return 2
	}
	restConfig.QPS, restConfig.Burst = 200, 400
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodes: %v\n", err)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ours := map[string]bool{}
	for _, spec := range specs {
		ours[spec.Name] = true
		if err := register(ctx, client, spec); err != nil {
			fmt.Fprintf(os.Stderr, "nodes: register %s: %v\n", spec.Name, err)
			return 1
		}
	}
	go heartbeat(ctx, client, specs)
	runPods(ctx, client, ours)
	return 0
}

func register(ctx context.Context, client kubernetes.Interface, spec nodeSpec) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: map[string]string{
		"kubernetes.io/hostname": spec.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "qmcluster-node",
	}}}
	for key, value := range spec.Labels {
		node.Labels[key] = value
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return reportStatus(ctx, client, spec)
}

func quantity(value, fallback string) resource.Quantity {
	if value == "" {
		value = fallback
	}
	return resource.MustParse(value)
}

func reportStatus(ctx context.Context, client kubernetes.Interface, spec nodeSpec) error {
	node, err := client.CoreV1().Nodes().Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              quantity(spec.CPU, "32"),
		corev1.ResourceMemory:           quantity(spec.Memory, "256Gi"),
		corev1.ResourcePods:             quantity(spec.Pods, "110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	node.Status.Capacity = capacity
	node.Status.Allocatable = capacity
	node.Status.Phase = corev1.NodeRunning
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: spec.Name}}
	node.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion:          kubernetesVersion(),
		OperatingSystem:         "linux",
		Architecture:            "amd64",
		ContainerRuntimeVersion: "qmcluster://simulated",
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated node is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
	}
	for i := range conditions {
		conditions[i].LastHeartbeatTime = now
		conditions[i].LastTransitionTime = now
		for _, old := range node.Status.Conditions {
			if old.Type == conditions[i].Type && old.Status == conditions[i].Status {
				conditions[i].LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	node.Status.Conditions = conditions
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews each node's Lease, and its status less often, as the kubelet does, so
// the node lifecycle controller keeps the nodes Ready and untainted.
func heartbeat(ctx context.Context, client kubernetes.Interface, specs []nodeSpec) {
	ticker := time.NewTicker(heartbeatEvery)
	defer ticker.Stop()
	for beat := 0; ; beat++ {
		for _, spec := range specs {
			if err := renewLease(ctx, client, spec.Name); err != nil && ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "nodes: lease %s: %v\n", spec.Name, err)
			}
			if beat%3 == 2 {
				if err := reportStatus(ctx, client, spec); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "nodes: status %s: %v\n", spec.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func renewLease(ctx context.Context, client kubernetes.Interface, name string) error {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name),
				LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime:            &now,
			},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// runPods watches the pods bound to our nodes until ctx ends.
func runPods(ctx context.Context, client kubernetes.Interface, ours map[string]bool) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(options *metav1.ListOptions) {
			options.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}))
	kubelet := &podRunner{client: client, ours: ours, ips: map[string]string{}}
	informer := factory.Core().V1().Pods().Informer()
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { kubelet.sync(ctx, obj) },
		UpdateFunc: func(_, obj interface{}) { kubelet.sync(ctx, obj) },
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

type podRunner struct {
	client kubernetes.Interface
	ours   map[string]bool
	mu     sync.Mutex
	ips    map[string]string
	next   int
}

func (r *podRunner) podIP(uid string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ip, ok := r.ips[uid]; ok {
		return ip
	}
	r.next++
	// documentation range (RFC 5737): a value in a status field, never dialled
	ip := fmt.Sprintf("192.0.2.%d", r.next%250+1)
	r.ips[uid] = ip
	return ip
}

func (r *podRunner) sync(ctx context.Context, obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.ours[pod.Spec.NodeName] {
		return
	}
	if pod.DeletionTimestamp != nil {
		r.finishDeletion(ctx, pod)
		return
	}
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	now := metav1.Now()
	updated := pod.DeepCopy()
	updated.Status.Phase = corev1.PodRunning
	updated.Status.HostIP = "192.0.2.254"
	updated.Status.HostIPs = []corev1.HostIP{{IP: updated.Status.HostIP}}
	updated.Status.PodIP = r.podIP(string(pod.UID))
	updated.Status.PodIPs = []corev1.PodIP{{IP: updated.Status.PodIP}}
	updated.Status.StartTime = &now
	updated.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	updated.Status.InitContainerStatuses = containerStatuses(pod.Spec.InitContainers, now, false)
	updated.Status.ContainerStatuses = containerStatuses(pod.Spec.Containers, now, true)
	if _, err := r.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "nodes: pod %s/%s status: %v\n", pod.Namespace, pod.Name, err)
	}
}

func containerStatuses(containers []corev1.Container, now metav1.Time, running bool) []corev1.ContainerStatus {
	statuses := make([]corev1.ContainerStatus, 0, len(containers))
	for _, container := range containers {
		status := corev1.ContainerStatus{
			Name:        container.Name,
			Image:       container.Image,
			ImageID:     "simulated://" + container.Image,
			ContainerID: "simulated://" + container.Name,
			Ready:       running,
			Started:     ptr.To(running),
		}
		if running {
			status.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
		} else {
			status.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}
		}
		statuses = append(statuses, status)
	}
	return statuses
}

// finishDeletion removes a terminating pod once its grace period has run, as the kubelet
// does after its containers stopped.
func (r *podRunner) finishDeletion(ctx context.Context, pod *corev1.Pod) {
	wait := time.Duration(0)
	if pod.DeletionGracePeriodSeconds != nil && pod.DeletionTimestamp != nil {
		wait = time.Until(pod.DeletionTimestamp.Time)
	}
	go func() {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		err := r.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			fmt.Fprintf(os.Stderr, "nodes: delete %s/%s: %v\n", pod.Namespace, pod.Name, err)
		}
	}()
}
