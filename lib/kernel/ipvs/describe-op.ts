import { constants as osConstants } from 'node:os';
import { getSystemErrorMessage } from 'node:util';
import { NetlinkError } from '../../errors';
import { describeVirtualServer, hostPort } from '../../model/ipvs';
import { IpvsRequest } from '../../netlink/ipvs-codec';
import { GenlFailure } from '../../netlink/socket';

const E = osConstants.errno;

/** "add virtual server" + "TCP 10.96.0.10:80": how errors and logs name a request. */
export function describeRequest(req: IpvsRequest): { operation: string; object: string } {
  switch (req.kind) {
    case 'newService':
      return { operation: 'add virtual server', object: describeVirtualServer(req.vs) };
    case 'setService':
      return { operation: 'edit virtual server', object: describeVirtualServer(req.vs) };
    case 'delService':
      return { operation: 'delete virtual server', object: describeVirtualServer(req.vs) };
    case 'getService':
      return { operation: 'get virtual server', object: describeVirtualServer(req.vs) };
    case 'dumpServices':
      return { operation: 'list virtual servers', object: '' };
    case 'newDest':
    case 'setDest':
    case 'delDest': {
      const verb = req.kind === 'newDest' ? 'add' : req.kind === 'setDest' ? 'edit' : 'delete';
      return {
        operation: `${verb} real server`,
        object: `${hostPort(req.rs.af, req.rs.address, req.rs.port)} of ${describeVirtualServer(req.vs)}`,
      };
    }
    case 'dumpDests':
      return { operation: 'list real servers of', object: describeVirtualServer(req.vs) };
    case 'getInfo':
      return { operation: 'get IPVS info', object: '' };
    case 'getConfig':
      return { operation: 'get IPVS timeouts', object: '' };
    case 'setConfig':
      return {
        operation: 'set IPVS timeouts',
        object: `tcp ${req.timeouts.tcp} tcpfin ${req.timeouts.tcpFin} udp ${req.timeouts.udp}`,
      };
    case 'zero':
      return { operation: 'zero counters of', object: req.vs ? describeVirtualServer(req.vs) : 'all virtual servers' };
    case 'flush':
      return { operation: 'flush', object: 'the IPVS table' };
  }
}

/** What an errno means for this request, in words an operator can act on. */
function reasonFor(req: IpvsRequest, errno: number): string {
  const dest = req.kind === 'newDest' || req.kind === 'setDest' || req.kind === 'delDest';
  switch (errno) {
    case E.EEXIST:
      return dest ? 'real server already exists' : 'virtual server already exists';
    case E.ESRCH:
      return 'no such virtual server';
    case E.ENOENT:
      if (req.kind === 'newService' || req.kind === 'setService') {
        return req.vs.peName
          ? `scheduler '${req.vs.scheduler}' or persistence engine '${req.vs.peName}' not available`
          : `scheduler '${req.vs.scheduler}' not available`;
      }
      return dest ? 'no such real server' : 'not found';
    case E.EINVAL:
      return 'invalid argument';
    case E.EPERM:
      return 'operation not permitted (needs CAP_NET_ADMIN in the network namespace)';
    case E.EAFNOSUPPORT:
      return 'address family not supported';
    case E.EBUSY:
      return 'busy';
    default:
      try {
        return getSystemErrorMessage(-errno).toLowerCase();
      } catch {
        return `error ${errno}`;
      }
  }
}

/** Turns an IPVS request's netlink failure into a NetlinkError naming the operation and object. */
export function toNetlinkError(req: IpvsRequest, f: GenlFailure, opIndex?: number): NetlinkError {
  const { operation, object } = describeRequest(req);
  return new NetlinkError(f.errno, operation, object, reasonFor(req, f.errno), f.extack, opIndex);
}
