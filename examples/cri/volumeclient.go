package cri

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClientVolumes is a VolumeClient over a clientset (the node's: the Node authorizer lets
// it read the ConfigMaps and Secrets and request the tokens of its pods only).
func ClientVolumes(client kubernetes.Interface) VolumeClient { return clientVolumes{client} }

type clientVolumes struct{ c kubernetes.Interface }

func (c clientVolumes) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return c.c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clientVolumes) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return c.c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clientVolumes) CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return c.c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, serviceAccount, tr, metav1.CreateOptions{})
}
