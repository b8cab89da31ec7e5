"""Cluster state implementations behind webhook.model.cluster.ClusterState."""
