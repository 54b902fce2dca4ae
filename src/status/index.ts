export { Traffic, OTHER, TOP_CLIENTS, type ClientInfo, type TrafficEra } from './traffic.js';
export { replicaPart, trafficEra, type PartSources, type ReplicaPart, type UpstreamSource } from './part.js';
export { ClusterStatus, type PartStore, type SharedStatus } from './cluster.js';
export { statusView, type StatusView } from './view.js';
export { PAGE_POLICY, renderPage } from './page.js';
