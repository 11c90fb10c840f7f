#!/usr/bin/env node
// noded-rpc-edge: the rpc-edge service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service rpc-edge` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { rpcEdgeModule } from './rpc-edge.module.js';

await serviceMain('rpc-edge', rpcEdgeModule);
