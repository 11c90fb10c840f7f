#!/usr/bin/env node
// noded-consensus: the consensus service on its own, what its image runs (no CLI in it): the same options
// and behaviour as `noded service consensus` (docs/cluster.md "Per-service images").
import { serviceMain } from '@noded/service-shared/src/run.js';
import { consensusModule } from './consensus.module.js';

await serviceMain('consensus', consensusModule);
