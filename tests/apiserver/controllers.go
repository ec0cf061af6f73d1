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
	"k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/serviceaccount"
)

// runControllers runs the two cheap controllers whose absence tests would
// trip over: the namespace controller (a deleted namespace is emptied and
// goes away instead of staying Terminating) and the service-account
// controller (each namespace gets its "default" ServiceAccount, which the
// ServiceAccount admission plugin requires before it admits a Pod).
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
	factory.Start(ctx.Done())
	go ns.Run(ctx, 2)
	go sa.Run(ctx, 1)
}
