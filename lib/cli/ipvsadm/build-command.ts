// After the options are read: ipvsadm's checks of the whole command line (left-over
// arguments, --set's timeouts, scheduler flags, commands_v_options, the service and server
// rules) and the typed command they give.

import { IpvsTimeouts, RealServerSpec, VirtualServerId, VirtualServerSpec, AddressFamily } from '../../model/ipvs';
import { AF_INET, AF_INET6, IPPROTO_UDP } from '../../uapi/inet';
import { IP_VS_CONN_F, IP_VS_SVC_F } from '../../uapi/ip_vs';
import { CommandName, DEF_SCHED, IpvsadmCommand, fail, tryhelp } from './command';
import { OptName, ParseState, TUNNEL_OPTS, genericOptCheck, tunnelOptCheck } from './option-table';
import { MAX_TIMEOUT, parseSchedFlags, parseTimeout } from './parse-values';

/** The command `st` describes, or Fail (ipvsadm's message) when the line is not legal. */
export function buildCommand(
  command: CommandName,
  st: ParseState,
  rest: string[],
  readingStdin: boolean,
): IpvsadmCommand {
  const timeouts = checkCommandLine(command, st, rest, readingStdin);
  const { svc, dest, format } = st;
  const svcAf = (svc.af || AF_INET) as AddressFamily;
  const vsId: VirtualServerId = svc.fwmark
    ? { af: svcAf, protocol: 0, address: '', port: 0, fwmark: svc.fwmark }
    : {
        af: svcAf,
        protocol: svc.protocol,
        address: svc.address || (svcAf === AF_INET6 ? '::' : '0.0.0.0'),
        port: svc.port,
        fwmark: 0,
      };

  switch (command) {
    case 'list':
      return listCommand(st, vsId);
    case 'save':
      return { kind: 'save', format: { ...format, rule: true } };
    case 'restore':
      return { kind: 'restore' };
    case 'start-daemon':
    case 'stop-daemon':
      return { kind: 'daemon', command };
    case 'flush':
      return { kind: 'op', command, op: { kind: 'flush' } };
    case 'set':
      return { kind: 'op', command, op: { kind: 'setConfig', timeouts: timeouts! } };
    case 'zero': {
      // libipvs zeroes everything unless a fwmark, an address or a port identifies a service
      const any = !svc.fwmark && !svc.port && (svc.address === '' || /^(0\.0\.0\.0|::)$/.test(svc.address));
      return { kind: 'op', command, op: any ? { kind: 'zero' } : { kind: 'zero', vs: vsId } };
    }
    case 'add-service':
    case 'edit-service': {
      const spec: VirtualServerSpec = {
        ...vsId,
        scheduler: svc.scheduler,
        flags: svc.flags,
        timeout: svc.timeout,
        netmask: svc.netmask,
        peName: svc.peName,
      };
      return { kind: 'op', command, op: { kind: command === 'add-service' ? 'newService' : 'setService', vs: spec } };
    }
    case 'delete-service':
      return { kind: 'op', command, op: { kind: 'delService', vs: vsId } };
    case 'add-server':
    case 'edit-server': {
      const rs: RealServerSpec = {
        af: dest.af as AddressFamily,
        address: dest.address,
        port: dest.port,
        fwdMethod: dest.fwd,
        weight: dest.weight,
        uThreshold: dest.uThreshold,
        lThreshold: dest.lThreshold,
        ...(dest.fwd === IP_VS_CONN_F.TUNNEL
          ? { tunType: dest.tunType, tunPort: dest.tunPort, tunFlags: dest.tunFlags }
          : {}),
      };
      return { kind: 'op', command, op: { kind: command === 'add-server' ? 'newDest' : 'setDest', vs: vsId, rs } };
    }
    case 'delete-server':
      return {
        kind: 'op',
        command,
        op: { kind: 'delDest', vs: vsId, rs: { af: dest.af as AddressFamily, address: dest.address, port: dest.port } },
      };
  }
}

/** The checks, in ipvsadm's order; --set's timeouts when the command is set. */
function checkCommandLine(
  command: CommandName,
  st: ParseState,
  rest: string[],
  readingStdin: boolean,
): IpvsTimeouts | undefined {
  const { svc, dest, options } = st;
  let timeouts: IpvsTimeouts | undefined;
  if (command === 'set') {
    if (rest.length < 3) fail('--set option requires 3 timeout values');
    const [a, b, c] = rest.splice(0, 3) as [string, string, string];
    timeouts = {
      tcp: parseTimeout(a, 0, MAX_TIMEOUT),
      tcpFin: parseTimeout(b, 0, MAX_TIMEOUT),
      udp: parseTimeout(c, 0, MAX_TIMEOUT),
    };
  }
  if (rest.length > 0) fail(`unexpected argument ${rest[0]}`);

  if (st.schedFlagsArg) {
    svc.flags &= ~(IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED2 | IP_VS_SVC_F.SCHED3);
    svc.flags |= parseSchedFlags(svc.scheduler, st.schedFlagsArg);
  }

  genericOptCheck(command, options);

  if (command === 'add-service' || command === 'edit-service') {
    if (!svc.fwmark && !svc.port && !(svc.flags & IP_VS_SVC_F.PERSISTENT))
      fail('Zero port specified for non-persistent service');
    if (svc.flags & IP_VS_SVC_F.ONEPACKET && !svc.fwmark && svc.protocol !== IPPROTO_UDP) {
      fail('One-Packet Scheduling is only for UDP virtual services');
    }
    if (!svc.scheduler) svc.scheduler = DEF_SCHED;
  }

  if (command === 'add-server' || command === 'edit-server') {
    // direct routing and tunnelling cannot change the port
    if (!svc.fwmark && (dest.fwd === IP_VS_CONN_F.TUNNEL || dest.fwd === IP_VS_CONN_F.DROUTE)) dest.port = svc.port;
    if (dest.af !== svc.af && dest.fwd !== IP_VS_CONN_F.TUNNEL)
      fail('Different address family is allowed only for tunneling servers');
    const tunOpts = (['tun-type', ...TUNNEL_OPTS] as OptName[]).some((n) => options.has(n));
    if (dest.fwd !== IP_VS_CONN_F.TUNNEL) {
      if (tunOpts) fail('Tunnel options conflict with forward method');
    } else tunnelOptCheck(st.tunTypeName, options);
  }

  if (command === 'restore' && readingStdin) tryhelp();
  return timeouts;
}

function listCommand(st: ParseState, vs: VirtualServerId): IpvsadmCommand {
  const { options, format } = st;
  if (
    ((options.has('connection') || options.has('timeout') || options.has('daemon')) &&
      (options.has('stats') || options.has('rate') || options.has('thresholds'))) ||
    ((options.has('timeout') || options.has('daemon')) && options.has('persistent-conn'))
  ) {
    fail('options conflicts in the list command');
  }
  if (options.has('connection')) return { kind: 'list-connections', format };
  if (options.has('service-address')) return { kind: 'list-service', format, vs };
  if (options.has('timeout')) return { kind: 'list-timeout' };
  if (options.has('daemon')) return { kind: 'list-daemon' };
  return { kind: 'list-all', format };
}
