package main

import (
	"context"
	"log"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/controller/volume/pvcprotection"
)

// runControllers runs the three cheap controllers whose absence tests would
// trip over: the namespace controller (a deleted namespace is emptied and
// goes away instead of staying Terminating), the service-account controller
// (each namespace gets its "default" ServiceAccount, which the
// ServiceAccount admission plugin requires before it admits a Pod) and the
// PVC-protection controller (admission puts the kubernetes.io/pvc-protection
// finalizer on every claim; without it a deleted claim stays forever and
// `kubectl delete` waits for it).
func runControllers(kubeconfig string) {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		log.Printf("controllers: %v", err)
		return
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	// The API server starts after this goroutine: wait for it rather than
	// letting informers log connection errors.
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	meta := metadata.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(client, 0)
	ns := namespace.NewNamespaceController(ctx, client, meta,
		client.Discovery().ServerPreferredNamespacedResources,
		factory.Core().V1().Namespaces(), 5*time.Minute, v1.FinalizerKubernetes)
	sa, err := serviceaccount.NewServiceAccountsController(
		factory.Core().V1().ServiceAccounts(), factory.Core().V1().Namespaces(),
		client, serviceaccount.DefaultServiceAccountsControllerOptions())
	if err != nil {
		log.Printf("controllers: %v", err)
		return
	}
	pvc, err := pvcprotection.NewPVCProtectionController(klog.Background(),
		factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().Pods(), client)
	if err != nil {
		log.Printf("controllers: %v", err)
		return
	}
	factory.Start(ctx.Done())
	go ns.Run(ctx, 2)
	go sa.Run(ctx, 1)
	go pvc.Run(ctx, 1)
}
