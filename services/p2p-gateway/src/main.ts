#!/usr/bin/env node
// noded-p2p-gateway: the p2p-gateway service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service p2p-gateway` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { p2pGatewayModule } from './p2p-gateway.module.js';

await serviceMain('p2p-gateway', p2pGatewayModule);
